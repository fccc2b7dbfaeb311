//! GPU tests of the screen co-occurrence: the co-occurrence pass against the record's CPU
//! reference (`ViewCounts::count`) on synthetic material-id images (one adapter: lavapipe
//! in CI).

use neurotex::cluster::ViewCounts;
use neurotex::gpu::encoder::FrameEncoder;
use neurotex::gpu::{GpuContext, GpuProfiler};
use neurotex::render::divergence_stats::{NO_DECODER, NO_MATERIAL};
use neurotex::render::passes::cooccurrence::{
    CooccurrenceInputs, CooccurrencePass, SignatureBuffer,
};
use neurotex::render::passes::divergence::DecoderMap;
use neurotex::render::targets::Target;
use neurotex::render::tiles::TileSize;

use crate::common::ctx;

/// 53 = 3·16 + 5 = 6·8 + 5 columns, 37 = 2·16 + 5 = 9·4 + 1 rows: partial tiles at both
/// edges for every tile size.
const SIZE: (u32, u32) = (53, 37);

/// Materials in the map; ids from here on are past it.
const MAPPED: u32 = 280;

/// Material `i` → set `7i mod 263` (distinct for distinct `i` below 263), every 11th
/// material without a set.
fn set_map() -> Vec<u32> {
    (0..MAPPED)
        .map(|i| if i % 11 == 5 { NO_DECODER } else { i * 7 % 263 })
        .collect()
}

/// A small hash of `i` (deterministic pseudo-random ids).
fn hash(mut h: u32) -> u32 {
    h = h.wrapping_mul(0x9E37_79B9);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2C1B_3C6D);
    h ^ (h >> 12)
}

/// Random words: no geometry in the top-left 16×16 block (tiles without a set); a 16×16
/// block at (16, 16) of 256 distinct materials (a tile of 16×16
/// pixels that shows as many sets as it has pixels, minus those without one), elsewhere
/// pixels without geometry, ids past the map, ids 0xABCDE and random mapped ids in cells
/// of 3×2 pixels (so tiles hold a few sets, as on screen) but material 23 alone in the
/// bottom 5 rows (tiles of one set), every other pixel with bit 31 set.
fn words(salt: u32) -> Vec<u32> {
    let (w, h) = SIZE;
    let mut out = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            let sign = if (x ^ y) & 1 == 1 { 0x8000_0000 } else { 0 };
            let r = hash((x + 1000 * y) ^ salt.wrapping_mul(0x85EB_CA6B));
            let word = if x < 16 && y < 16 {
                NO_MATERIAL
            } else if (16..32).contains(&x) && (16..32).contains(&y) {
                ((y - 16) * 16 + (x - 16)) | sign
            } else {
                match r % 16 {
                    0 | 1 => NO_MATERIAL,
                    2 => (MAPPED + r % 50) | sign,
                    3 => 0xA_BCDE | sign,
                    _ if y >= 32 => 23 | sign,
                    _ => hash((x / 3) * 31 + (y / 2) * 977 + salt) % 12 * 23 | sign,
                }
            };
            out.push(word);
        }
    }
    out
}

/// An R32Uint texture holding `words`.
fn material_target(ctx: &GpuContext, words: &[u32]) -> Target {
    let target = Target::new(
        &ctx.device,
        "test.material",
        SIZE,
        wgpu::TextureFormat::R32Uint,
        wgpu::TextureUsages::COPY_DST,
    );
    ctx.queue.write_texture(
        target.texture.as_image_copy(),
        bytemuck::cast_slice(words),
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(SIZE.0 * 4),
            rows_per_image: Some(SIZE.1),
        },
        wgpu::Extent3d {
            width: SIZE.0,
            height: SIZE.1,
            depth_or_array_layers: 1,
        },
    );
    target
}

#[test]
fn gpu_signatures_equal_the_cpu_count_for_every_tile_size() {
    let ctx = ctx();
    let map = set_map();
    let set_map = DecoderMap::new(&ctx.device, "test.set_map", &map);
    for tile in TileSize::ALL {
        let pass = CooccurrencePass::new(ctx, tile).unwrap_or_else(|e| panic!("{e}"));
        let out = SignatureBuffer::new(ctx, tile, SIZE).expect("signature buffer");
        for salt in [1, 2] {
            let words = words(salt);
            let ids = material_target(ctx, &words);
            let profiler = GpuProfiler::new(ctx);
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            let inputs = CooccurrenceInputs {
                material_ids: &ids,
                set_map: &set_map,
            };
            pass.record(
                &mut FrameEncoder::new(ctx, &mut encoder, &profiler),
                &inputs,
                &out,
            )
            .expect("record");
            ctx.queue.submit([encoder.finish()]);
            let gpu = ViewCounts::from_histogram(out.read_histogram(ctx).expect("read"));
            let cpu = ViewCounts::count(&words, SIZE, tile, &map);
            assert_eq!(gpu, cpu, "{tile}, salt {salt}");
            // The image exercises what it claims to: tiles of one and of several sets,
            // tiles showing no set, and (16×16) one tile of 233 sets.
            let (gw, gh) = tile.grid(SIZE);
            assert!(cpu.covered_tiles() < u64::from(gw * gh), "{tile}");
            assert!(cpu.signatures.iter().any(|s| s.sets.len() == 1), "{tile}");
            assert!(cpu.signatures.iter().any(|s| s.sets.len() >= 3), "{tile}");
            let largest = cpu.signatures.iter().map(|s| s.sets.len()).max();
            if tile == TileSize::T16x16 {
                // 256 materials, 23 of them (i mod 11 = 5) without a set.
                assert_eq!(largest, Some(233), "{tile}");
            }
        }
        // Signatures of another size are refused, not written out of bounds.
        let other = SignatureBuffer::new(ctx, tile, (SIZE.0 + 8, SIZE.1)).expect("buffer");
        let ids = material_target(ctx, &words(1));
        let profiler = GpuProfiler::new(ctx);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let inputs = CooccurrenceInputs {
            material_ids: &ids,
            set_map: &set_map,
        };
        let frame = &mut FrameEncoder::new(ctx, &mut encoder, &profiler);
        assert!(pass.record(frame, &inputs, &other).is_err());
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}
