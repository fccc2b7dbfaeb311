//! The split comparison's composition pass against its CPU reference, into a UNORM
//! target (bytes pass through exactly) and an sRGB one (decoded, then encoded by the
//! adapter), in both the image and the difference view.

use neurotex::gpu::upload::write_level;
use neurotex::gpu::{GpuContext, read_texture};
use neurotex::render::passes::image_error::ERROR_FORMAT;
use neurotex::render::passes::split::{Composition, SplitInputs, SplitPass, reference_compose};
use neurotex::render::targets::Target;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

use crate::common::{ctx, submit};

/// Not a multiple of the raster's tiles.
const SIZE: (u32, u32) = (37, 23);

/// A `SIZE` texture of `format` holding `bytes` (tightly packed).
fn upload(ctx: &GpuContext, format: wgpu::TextureFormat, bytes: &[u8]) -> Target {
    let target = Target::new(
        &ctx.device,
        "test.split.input",
        SIZE,
        format,
        wgpu::TextureUsages::COPY_DST,
    );
    write_level(&ctx.queue, &target.texture, 0, bytes);
    target
}

#[test]
fn split_pass_matches_its_cpu_reference() {
    let ctx = ctx();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    let pixels = (SIZE.0 * SIZE.1) as usize;
    let mut bytes = |n: usize| {
        let mut v = vec![0u8; n];
        rng.fill_bytes(&mut v);
        v
    };
    let (left, right) = (bytes(4 * pixels), bytes(4 * pixels));
    // Errors spread over [0, 0.02]: at ×8 the grey levels cover the whole range.
    let errors: Vec<Vec<f32>> = (0..2)
        .map(|_| {
            bytes(pixels)
                .into_iter()
                .map(|b| f32::from(b) / 255.0 * 0.02)
                .collect()
        })
        .collect();
    let inputs = [
        upload(ctx, wgpu::TextureFormat::Rgba8Unorm, &left),
        upload(ctx, wgpu::TextureFormat::Rgba8Unorm, &right),
        upload(ctx, ERROR_FORMAT, bytemuck::cast_slice(&errors[0])),
        upload(ctx, ERROR_FORMAT, bytemuck::cast_slice(&errors[1])),
    ];
    let split = SplitInputs {
        left: &inputs[0],
        right: &inputs[1],
        left_error: &inputs[2],
        right_error: &inputs[3],
    };
    for format in [
        wgpu::TextureFormat::Rgba8Unorm,
        wgpu::TextureFormat::Rgba8UnormSrgb,
    ] {
        let pass = SplitPass::new(ctx, format).expect("split pass");
        for composition in [
            Composition {
                divider: 17,
                difference: None,
            },
            Composition {
                divider: 0,
                difference: Some(8.0),
            },
            Composition {
                divider: 30,
                difference: Some(40.0),
            },
        ] {
            let output = Target::new(
                &ctx.device,
                "test.split.output",
                SIZE,
                format,
                wgpu::TextureUsages::empty(),
            );
            submit(ctx, |frame| {
                pass.record(frame, &split, &composition, &output.view);
            });
            let got = read_texture(ctx, &output.texture, 0, 0)
                .expect("read")
                .bytes;
            let want =
                reference_compose(&left, &right, &errors[0], &errors[1], SIZE.0, &composition);
            // UNORM: exact; sRGB: the adapter's encoder, within one code; the grey level
            // rounds at the same ties as the CPU's only up to one code.
            let exact =
                format == wgpu::TextureFormat::Rgba8Unorm && composition.difference.is_none();
            let tolerance = if exact { 0 } else { 1 };
            for (i, (g, w)) in got.chunks_exact(4).zip(want.chunks_exact(4)).enumerate() {
                for c in 0..4 {
                    assert!(
                        g[c].abs_diff(w[c]) <= tolerance,
                        "{format:?} {composition:?}: pixel {i} channel {c}: GPU {}, CPU {}",
                        g[c],
                        w[c]
                    );
                }
            }
        }
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}
