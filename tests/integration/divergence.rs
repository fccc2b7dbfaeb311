//! GPU tests of the divergence statistics, the heatmap overlay, the image-error pass and
//! the reference pass's material classification (one binary, one adapter: lavapipe in CI)
//! against their CPU references, on a synthetic 37×29 material-id image: not a multiple of any tile size, with pixels without geometry,
//! materials that share a decoder in the current map but not in the baseline map, a
//! material without a decoder, ids past the maps and the bitangent-sign bit set.
//! Plus the host ↔ WGSL mirrors these passes rely on (no GPU needed), and the tonemap
//! pass's sRGB encoding against the CPU encoder on a ramp of values.

use neurotex::gpu::Defines;
use neurotex::gpu::encoder::FrameEncoder;
use neurotex::gpu::mirror::{assert_mirrors, wgsl_size};
use neurotex::gpu::shader::ShaderLibrary;
use neurotex::gpu::upload::write_level;
use neurotex::gpu::{GpuContext, GpuProfiler, layout, read_texture};
use neurotex::render::passes::divergence::{
    DecoderMap, DivergenceInputs, DivergencePass, STATS_RING,
};
use neurotex::render::passes::heatmap::{
    HeatmapInputs, HeatmapPass, HeatmapSettings, HeatmapSource, HeatmapUniform, colormap,
};
use neurotex::render::passes::image_error::{
    CompareError, ErrorSpace, ErrorTargets, ImageErrorInputs, ImageErrorPass, ImageErrorUniform,
    PARTIAL_BYTES, reference_error,
};
use neurotex::render::passes::reference::{
    MaterialClassify, MaterialRect, classify_reference, dispatch_args_reference,
};
use neurotex::render::targets::{GBuffer, GBufferMode, MaterialTargets, Target};
use neurotex::screen::divergence::{
    DivergenceStats, NO_DECODER, NO_MATERIAL, TileCounts, count_tiles,
};
use neurotex::screen::material_word::MATERIAL_ID_MASK;
use neurotex::screen::tiles::TileSize;

use crate::common::{ctx, submit};

/// The synthetic image's size: 37 = 4·8 + 5 = 2·16 + 5 columns, 29 = 7·4 + 1 = 3·8 + 5
/// rows, so every tile size has partial tiles at both edges.
const SIZE: (u32, u32) = (37, 29);

/// Material → decoder, current map: materials 0+1, 2+3, 4+6 and 7+8 share decoders
/// (one of them the largest valid index), material 5 decodes nothing.
const CURRENT: [u32; 10] = [
    0,
    0,
    1,
    1,
    4_000_000_000,
    NO_DECODER,
    4_000_000_000,
    2,
    2,
    3,
];
/// The baseline map: one decoder per material (5 still decodes nothing).
const BASELINE: [u32; 10] = [0, 1, 2, 3, 4, NO_DECODER, 6, 7, 8, 9];

/// The material words of [`SIZE`]: no geometry in a 9×8 top-left block (a whole empty
/// tile for 8×8 and 8×4) and along a diagonal; material 5 (no decoder) alone in the
/// bottom-right block; elsewhere 3×2 cells of hashed ids in 0..=11 (10 and 11 are past
/// the maps) or 0xABCDE (far past), every other pixel with bit 31 set.
fn synthetic_words() -> Vec<u32> {
    let (w, h) = SIZE;
    let mut words = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            let sign = if (x ^ y) & 1 == 1 { 0x8000_0000 } else { 0 };
            let word = if (x < 9 && y < 8) || (x + 2 * y) % 23 == 0 {
                NO_MATERIAL
            } else if x >= 24 && y >= 16 {
                5 | sign
            } else {
                let cell = (x / 3).wrapping_mul(73_856_093) ^ (y / 2).wrapping_mul(19_349_663);
                match cell % 13 {
                    12 => 0xA_BCDE | sign,
                    id => id | sign,
                }
            };
            words.push(word);
        }
    }
    words
}

/// A G-buffer whose material target holds `words` (uploaded; the other targets unused).
fn gbuffer_with(ctx: &GpuContext, size: (u32, u32), words: &[u32]) -> GBuffer {
    let mut gbuffer = GBuffer::new(&ctx.device, size, GBufferMode::Raster);
    let texture = upload(
        ctx,
        "test.material",
        size,
        wgpu::TextureFormat::R32Uint,
        bytemuck::cast_slice(words),
    );
    let view = texture.create_view(&Default::default());
    gbuffer.material = Target { texture, view };
    gbuffer
}

/// A sampled, copyable, renderable texture of `format` holding `bytes`.
fn upload(
    ctx: &GpuContext,
    label: &str,
    size: (u32, u32),
    format: wgpu::TextureFormat,
    bytes: &[u8],
) -> wgpu::Texture {
    let extent = wgpu::Extent3d {
        width: size.0,
        height: size.1,
        depth_or_array_layers: 1,
    };
    let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size: extent,
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage: wgpu::TextureUsages::TEXTURE_BINDING
            | wgpu::TextureUsages::COPY_DST
            | wgpu::TextureUsages::COPY_SRC
            | wgpu::TextureUsages::RENDER_ATTACHMENT,
        view_formats: &[],
    });
    write_level(&ctx.queue, &texture, 0, bytes);
    texture
}

/// `texture` with its full view.
fn target(texture: wgpu::Texture) -> Target {
    let view = texture.create_view(&Default::default());
    Target { texture, view }
}

/// A divergence pass for `tile` with the test maps and a tile texture for [`SIZE`].
struct Divergence {
    pass: DivergencePass,
    current: DecoderMap,
    baseline: DecoderMap,
    tiles: Target,
}

impl Divergence {
    fn new(ctx: &GpuContext, tile: TileSize, size: (u32, u32)) -> Self {
        Self {
            pass: DivergencePass::new(ctx, tile).unwrap_or_else(|e| panic!("{e}")),
            current: DecoderMap::new(&ctx.device, "test.current", &CURRENT),
            baseline: DecoderMap::new(&ctx.device, "test.baseline", &BASELINE),
            tiles: DivergencePass::tile_target(&ctx.device, tile, size),
        }
    }

    /// Records the count over `gbuffer`'s material ids.
    fn record(&mut self, frame: &mut FrameEncoder<'_>, gbuffer: &GBuffer) {
        let inputs = DivergenceInputs {
            material_ids: &gbuffer.material,
            current: &self.current,
            baseline: &self.baseline,
        };
        self.pass.record(frame, &inputs, &self.tiles);
    }
}

/// A divergence pass over the synthetic image.
fn divergence_pass(ctx: &GpuContext, tile: TileSize) -> Divergence {
    Divergence::new(ctx, tile, SIZE)
}

#[test]
fn gpu_tile_counts_and_stats_equal_the_cpu_reference_for_every_tile_size() {
    let ctx = ctx();
    let words = synthetic_words();
    let gbuffer = gbuffer_with(ctx, SIZE, &words);
    for tile in TileSize::ALL {
        let expected = count_tiles(&words, SIZE, tile, &CURRENT, &BASELINE);
        let (gw, gh) = tile.grid(SIZE);
        assert_eq!(expected.len(), (gw * gh) as usize);
        // The image exercises what it claims to, for every tile size.
        assert!(
            expected.iter().any(|c| c.pixels > 0 && c.decoders == 0),
            "{tile}"
        );
        assert!(
            expected.iter().any(|c| c.decoders < c.baseline_decoders),
            "{tile}"
        );
        assert!(expected.iter().any(|c| c.decoders >= 2), "{tile}");
        assert!(
            expected.iter().any(|c| c.materials > c.baseline_decoders),
            "{tile}"
        );
        if tile != TileSize::T16x16 {
            assert!(expected.contains(&TileCounts::default()), "{tile}");
        }

        let mut d = divergence_pass(ctx, tile);
        submit(ctx, |frame| d.record(frame, &gbuffer));
        let stats = d.pass.stats_blocking(ctx).unwrap();
        assert_eq!(
            DivergencePass::read_tiles(ctx, &d.tiles).unwrap(),
            expected,
            "tile counts, {tile}"
        );
        let want = DivergenceStats::from_counts(tile, &expected);
        assert_eq!(stats, want, "statistics, {tile}");
        assert!(stats.score < stats.baseline_score, "{tile}: {stats:?}");
        assert_eq!(stats.histogram.iter().sum::<u32>(), gw * gh);
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

#[test]
fn stats_readback_never_waits_and_recovers_unsubmitted_frames() {
    let ctx = ctx();
    let words = synthetic_words();
    let gbuffer = gbuffer_with(ctx, SIZE, &words);
    let mut d = divergence_pass(ctx, TileSize::T8x4);
    // Nothing recorded yet: nothing to read, and saying so is an error, not a hang.
    assert!(d.pass.try_stats(&ctx.device).is_none());
    assert!(d.pass.stats_blocking(ctx).is_err());
    // Fill every staging buffer from encoders that are dropped unsubmitted...
    for _ in 0..STATS_RING {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let profiler = GpuProfiler::new(ctx);
        d.record(
            &mut FrameEncoder::new(ctx, &mut encoder, &profiler),
            &gbuffer,
        );
    }
    // ...which the next read notices and frees, so later frames still come back.
    assert!(d.pass.try_stats(&ctx.device).is_none());
    submit(ctx, |frame| d.record(frame, &gbuffer));
    ctx.wait_idle().unwrap();
    let want = DivergenceStats::from_counts(
        TileSize::T8x4,
        &count_tiles(&words, SIZE, TileSize::T8x4, &CURRENT, &BASELINE),
    );
    assert_eq!(d.pass.try_stats(&ctx.device), Some(want.clone()));
    // More frames than staging buffers between reads: the surplus is dropped, the newest
    // kept frames are returned.
    for _ in 0..STATS_RING + 2 {
        submit(ctx, |frame| d.record(frame, &gbuffer));
    }
    assert_eq!(d.pass.stats_blocking(ctx).unwrap(), want);
    assert!(d.pass.try_stats(&ctx.device).is_none());
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// The background the heatmap draws over: distinct bytes per pixel, alpha 200.
fn background(size: (u32, u32)) -> Vec<u8> {
    (0..size.1)
        .flat_map(|y| (0..size.0).flat_map(move |x| [(x * 7) as u8, (y * 9) as u8, 90, 200]))
        .collect()
}

fn srgb_decode(v: f64) -> f64 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

fn srgb_encode(v: f64) -> f64 {
    if v <= 0.003_130_8 {
        v * 12.92
    } else {
        1.055 * v.powf(1.0 / 2.4) - 0.055
    }
}

/// The bytes expected where the heatmap draws colour-map value `t` at `opacity` over
/// `dst` into `format`: sRGB targets blend in linear light, unorm targets in encoded
/// values; the destination alpha is kept.
fn blended(t: f32, opacity: f64, dst: &[u8], format: wgpu::TextureFormat) -> [f64; 4] {
    let c = colormap(t);
    let mut out = [0.0, 0.0, 0.0, f64::from(dst[3])];
    for i in 0..3 {
        let (src, bg) = (f64::from(c[i]), f64::from(dst[i]) / 255.0);
        out[i] = 255.0
            * if format.is_srgb() {
                srgb_encode(opacity * srgb_decode(src) + (1.0 - opacity) * srgb_decode(bg))
            } else {
                opacity * src + (1.0 - opacity) * bg
            };
    }
    out
}

/// Draws the heatmap of `settings` from `inputs` over [`background`] in a `format` output
/// of `size` and returns the output's bytes.
fn draw_heatmap(
    ctx: &GpuContext,
    format: wgpu::TextureFormat,
    size: (u32, u32),
    inputs: &HeatmapInputs<'_>,
    settings: &HeatmapSettings,
) -> Vec<u8> {
    let output = upload(ctx, "test.output", size, format, &background(size));
    let view = output.create_view(&Default::default());
    let heatmap = HeatmapPass::new(ctx, format).unwrap_or_else(|e| panic!("{e}"));
    submit(ctx, |frame| {
        heatmap.record(frame, inputs, settings, &view, size)
    });
    read_texture(ctx, &output, 0, 0).unwrap().bytes
}

/// Every pixel without geometry keeps its background bytes; every other pixel is within
/// `tolerance` 8-bit steps of `expected(pixel index, background bytes)`.
fn assert_overlay(
    what: &str,
    words: &[u32],
    actual: &[u8],
    tolerance: f64,
    expected: impl Fn(usize, &[u8]) -> [f64; 4],
) {
    let bg = background(SIZE);
    for (i, &word) in words.iter().enumerate() {
        let (got, dst) = (&actual[4 * i..4 * i + 4], &bg[4 * i..4 * i + 4]);
        let at = (i as u32 % SIZE.0, i as u32 / SIZE.0);
        if word == NO_MATERIAL {
            assert_eq!(
                got, dst,
                "{what}: pixel {at:?} without geometry was touched"
            );
            continue;
        }
        let want = expected(i, dst);
        for c in 0..4 {
            assert!(
                (f64::from(got[c]) - want[c]).abs() <= tolerance,
                "{what}: pixel {at:?} channel {c}: got {got:?}, want {want:?}"
            );
        }
    }
}

/// Picks one count of a tile.
type CountOf = fn(TileCounts) -> u32;

/// Tolerance of the heatmap colours, in 8-bit steps: the shader evaluates the colour map
/// in f32 and (for sRGB targets) round-trips it through `pow`-based sRGB curves before
/// the hardware quantises, so a value near a rounding boundary may land one step away;
/// blending adds the quantised destination's decode, one more step at most. A wrong
/// tile, channel, range or blend is off by many steps.
const COLOR_STEPS: f64 = 1.0;
const BLEND_STEPS: f64 = 2.0;

#[test]
fn heatmap_tints_covered_pixels_by_their_tile_and_leaves_the_rest() {
    let ctx = ctx();
    let words = synthetic_words();
    let gbuffer = gbuffer_with(ctx, SIZE, &words);
    let tile = TileSize::T8x8;
    let mut divergence = divergence_pass(ctx, tile);
    submit(ctx, |frame| divergence.record(frame, &gbuffer));
    divergence.pass.stats_blocking(ctx).unwrap();
    // An error texture of zeros: the error source must read it, not the tile counts.
    let zeros = ErrorTargets::new(&ctx.device, SIZE);
    let inputs = HeatmapInputs {
        material_ids: &gbuffer.material,
        tiles: &divergence.tiles,
        tile,
        error: &zeros.error,
    };
    let counts = count_tiles(&words, SIZE, tile, &CURRENT, &BASELINE);
    let (grid_w, _) = tile.grid(SIZE);
    let tile_of = |i: usize| {
        let (x, y) = (i as u32 % SIZE.0, i as u32 / SIZE.0);
        counts[(y / 8 * grid_w + x / 8) as usize]
    };
    // The known tile (1, 1) holds several decoders; its colour is not the range's end.
    assert!(tile_of((8 * SIZE.0 + 8) as usize).decoders >= 2);

    let sources: [(HeatmapSource, CountOf); 3] = [
        (HeatmapSource::Decoders, |c| c.decoders),
        (HeatmapSource::BaselineDecoders, |c| c.baseline_decoders),
        (HeatmapSource::Materials, |c| c.materials),
    ];
    for format in [
        wgpu::TextureFormat::Rgba8UnormSrgb,
        wgpu::TextureFormat::Rgba8Unorm,
    ] {
        for (source, count) in sources {
            let settings = HeatmapSettings {
                source,
                lo: 0.0,
                hi: 6.0,
                opacity: 1.0,
                color_bar: false,
            };
            let out = draw_heatmap(ctx, format, SIZE, &inputs, &settings);
            let what = format!("{source:?} into {format:?}");
            assert_overlay(&what, &words, &out, COLOR_STEPS, |i, dst| {
                blended(count(tile_of(i)) as f32 / 6.0, 1.0, dst, format)
            });
        }
        // Half opacity blends with the image underneath (values past `hi` clamp).
        let settings = HeatmapSettings {
            source: HeatmapSource::BaselineDecoders,
            lo: 1.0,
            hi: 3.0,
            opacity: 0.5,
            color_bar: false,
        };
        let out = draw_heatmap(ctx, format, SIZE, &inputs, &settings);
        assert_overlay(
            &format!("blend into {format:?}"),
            &words,
            &out,
            BLEND_STEPS,
            |i, dst| {
                let t = ((tile_of(i).baseline_decoders as f32 - 1.0) / 2.0).clamp(0.0, 1.0);
                blended(t, 0.5, dst, format)
            },
        );
    }
    // The error source reads the error texture (all zeros here, below `lo`: the first
    // colour of the map everywhere with geometry), not the tile counts.
    let settings = HeatmapSettings {
        source: HeatmapSource::Error,
        opacity: 1.0,
        color_bar: false,
        ..Default::default()
    };
    let format = wgpu::TextureFormat::Rgba8UnormSrgb;
    let out = draw_heatmap(ctx, format, SIZE, &inputs, &settings);
    assert_overlay("zero error", &words, &out, COLOR_STEPS, |_, dst| {
        blended(0.0, 1.0, dst, format)
    });
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

#[test]
fn heatmap_colour_bar_runs_from_hi_at_the_top_to_lo_at_the_bottom() {
    let ctx = ctx();
    let size = (128, 96);
    let gbuffer = gbuffer_with(ctx, size, &vec![NO_MATERIAL; (size.0 * size.1) as usize]);
    let divergence = Divergence::new(ctx, TileSize::T8x8, size);
    let error = ErrorTargets::new(&ctx.device, size);
    let inputs = HeatmapInputs {
        material_ids: &gbuffer.material,
        tiles: &divergence.tiles,
        tile: TileSize::T8x8,
        error: &error.error,
    };
    let format = wgpu::TextureFormat::Rgba8UnormSrgb;
    let settings = HeatmapSettings::default();
    let out = draw_heatmap(ctx, format, size, &inputs, &settings);
    let bar = HeatmapPass::color_bar_rect(size).expect("a 128×96 output has a bar");
    let bg = background(size);
    let inner_h = f64::from(bar.height - 2);
    for y in 0..size.1 {
        for x in 0..size.0 {
            let i = 4 * (y * size.0 + x) as usize;
            let (got, dst) = (&out[i..i + 4], &bg[i..i + 4]);
            let inside =
                (bar.x..bar.x + bar.width).contains(&x) && (bar.y..bar.y + bar.height).contains(&y);
            if !inside {
                assert_eq!(got, dst, "({x}, {y}) outside the bar has no geometry");
            } else if x == bar.x
                || y == bar.y
                || x == bar.x + bar.width - 1
                || y == bar.y + bar.height - 1
            {
                assert_eq!(got, [0, 0, 0, dst[3]], "frame at ({x}, {y})");
            } else {
                // Pixel centres: t = 1 − 0.5/inner_h in the top row, 0.5/inner_h at the bottom.
                let t = (f64::from(bar.y + bar.height - 1) - (f64::from(y) + 0.5)) / inner_h;
                let want = blended(t as f32, 1.0, dst, format);
                for c in 0..4 {
                    assert!(
                        (f64::from(got[c]) - want[c]).abs() <= COLOR_STEPS,
                        "bar at ({x}, {y}) channel {c}: got {got:?}, want {want:?}"
                    );
                }
            }
        }
    }
    // Without the bar, nothing is drawn over an image without geometry.
    let out = draw_heatmap(
        ctx,
        format,
        size,
        &inputs,
        &HeatmapSettings {
            color_bar: false,
            ..settings
        },
    );
    assert_eq!(out, bg);
}

/// Deterministic pseudo-random values in [0, 1).
fn noise(i: u32, salt: u32) -> f32 {
    let mut h = i.wrapping_mul(0x9E37_79B9) ^ salt.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2C1B_3C6D);
    h ^= h >> 12;
    (h >> 8) as f32 / (1u32 << 24) as f32
}

/// Tolerances against the f64 CPU reference (see `render::passes::image_error`).
///
/// Float inputs reach the shader exactly (f16 values on both sides), so a per-pixel
/// error differs only by f32 rounding, ≈ 1e-7 relative; the shader's `pow`-based sRGB
/// curve is within ≈ 1e-6 of the exact one (Vulkan's exp2/log2 precision), ≈ 4e-6 on an
/// error. The f32 workgroup sums and these deviations move the PSNR by < 1e-4 dB.
const FLOAT_INPUT: Tolerance = Tolerance {
    error: 1e-6,
    psnr_db: 1e-4,
};
/// sRGB-format inputs are decoded to linear by the texture unit, which Vulkan lets
/// approximate the curve (lavapipe uses a polynomial, measured ≈ 2e-3 off in linear
/// light near black); after re-encoding that moves an error by up to ≈ 2e-3 and the PSNR
/// of two random images by ≈ 0.006 dB. Comparing in the wrong space (no re-encoding)
/// moves typical errors by 0.05 and more, so these bounds still tell the spaces apart.
const SRGB_INPUT: Tolerance = Tolerance {
    error: 5e-3,
    psnr_db: 0.03,
};

/// Allowed deviation of a per-pixel error and of the PSNR.
#[derive(Clone, Copy, Debug)]
struct Tolerance {
    error: f32,
    psnr_db: f64,
}

#[test]
fn image_error_and_psnr_equal_the_cpu_reference() {
    let ctx = ctx();
    let words = synthetic_words();
    let gbuffer = gbuffer_with(ctx, SIZE, &words);
    let pixels = (SIZE.0 * SIZE.1) as usize;

    // Stored space, Rgba16Float inputs (material targets) with values past [0, 1].
    let to_half = |v: f32| half::f16::from_f32(v);
    let a: Vec<half::f16> = (0..4 * pixels as u32)
        .map(|i| to_half(noise(i, 1) * 1.3 - 0.1))
        .collect();
    let b: Vec<half::f16> = a
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let i = i as u32;
            // A third of the pixels differ, by up to ±0.2.
            if noise(i / 4, 2) < 0.33 {
                to_half(v.to_f32() + (noise(i, 3) - 0.5) * 0.4)
            } else {
                v
            }
        })
        .collect();
    let f16 = wgpu::TextureFormat::Rgba16Float;
    let tex_a = target(upload(ctx, "test.a", SIZE, f16, bytemuck::cast_slice(&a)));
    let tex_b = target(upload(ctx, "test.b", SIZE, f16, bytemuck::cast_slice(&b)));
    let floats = |v: &[half::f16]| v.iter().map(|h| h.to_f32()).collect::<Vec<_>>();
    let (a_f32, b_f32) = (floats(&a), floats(&b));

    let pass = ImageErrorPass::new(ctx).unwrap_or_else(|e| panic!("{e}"));
    let compare = |a: &Target, b: &Target, gbuffer: &GBuffer, space, out: &ErrorTargets| {
        let inputs = ImageErrorInputs {
            a,
            b,
            material_ids: &gbuffer.material,
            space,
        };
        submit(ctx, |frame| pass.record(frame, &inputs, out))
    };
    // Outputs of another size are refused.
    let small = ErrorTargets::new(&ctx.device, (5, 5));
    assert!(matches!(
        compare(&tex_a, &tex_b, &gbuffer, ErrorSpace::Stored, &small),
        Err(CompareError::SizeMismatch { .. })
    ));
    let out = ErrorTargets::new(&ctx.device, SIZE);

    let check = |a: &Target,
                 b: &Target,
                 (ref_a, ref_b): (&[f32], &[f32]),
                 space: ErrorSpace,
                 tolerance: Tolerance| {
        compare(a, b, &gbuffer, space, &out).unwrap();
        let (want_errors, want) = reference_error(ref_a, ref_b, &words, space);
        let got_errors = read_texture(ctx, &out.error.texture, 0, 0)
            .unwrap()
            .to_f32()
            .unwrap();
        for (i, (g, w)) in got_errors.iter().zip(&want_errors).enumerate() {
            assert!(
                (g - w).abs() <= tolerance.error,
                "{space:?}: pixel {i}: {g} vs {w}"
            );
        }
        let got = out.summary_blocking(ctx).unwrap();
        assert_eq!(got.pixels, want.pixels, "{space:?}");
        let (got_psnr, want_psnr) = (got.psnr().unwrap(), want.psnr().unwrap());
        assert!(
            (got_psnr - want_psnr).abs() <= tolerance.psnr_db,
            "{space:?}: PSNR {got_psnr} vs {want_psnr}"
        );
        assert_eq!(out.psnr_blocking(ctx).unwrap(), Some(got_psnr));
        (got_psnr, want_errors)
    };
    let (psnr, errors) = check(
        &tex_a,
        &tex_b,
        (&a_f32, &b_f32),
        ErrorSpace::Stored,
        FLOAT_INPUT,
    );
    assert!(
        (10.0..40.0).contains(&psnr),
        "a meaningful difference: {psnr} dB"
    );

    // sRGB-encoded space: linear colour (base colour targets) ...
    check(
        &tex_a,
        &tex_b,
        (&a_f32, &b_f32),
        ErrorSpace::SrgbEncoded,
        FLOAT_INPUT,
    );
    // ... and Rgba8UnormSrgb images (tonemapped outputs), which the shader loads as
    // linear; the reference gets the exactly decoded values.
    let bytes = |salt: u32| -> Vec<u8> {
        (0..4 * pixels as u32)
            .map(|i| (noise(i, salt) * 256.0) as u8)
            .collect()
    };
    let (bytes_a, bytes_b) = (bytes(4), bytes(5));
    let srgb = wgpu::TextureFormat::Rgba8UnormSrgb;
    let tex_sa = target(upload(ctx, "test.srgb_a", SIZE, srgb, &bytes_a));
    let tex_sb = target(upload(ctx, "test.srgb_b", SIZE, srgb, &bytes_b));
    let linear = |v: &[u8]| {
        v.iter()
            .map(|&b| srgb_decode(f64::from(b) / 255.0) as f32)
            .collect::<Vec<_>>()
    };
    check(
        &tex_sa,
        &tex_sb,
        (&linear(&bytes_a), &linear(&bytes_b)),
        ErrorSpace::SrgbEncoded,
        SRGB_INPUT,
    );

    // Identical images have no PSNR; nor do images without geometry.
    compare(&tex_a, &tex_a, &gbuffer, ErrorSpace::Stored, &out).unwrap();
    assert_eq!(out.psnr_blocking(ctx).unwrap(), None);
    let empty = gbuffer_with(ctx, SIZE, &vec![NO_MATERIAL; pixels]);
    compare(&tex_a, &tex_b, &empty, ErrorSpace::Stored, &out).unwrap();
    let summary = out.summary_blocking(ctx).unwrap();
    assert_eq!((summary.pixels, summary.psnr()), (0, None));
    // Integer images cannot be compared.
    assert!(matches!(
        compare(
            &gbuffer.material,
            &tex_b,
            &gbuffer,
            ErrorSpace::Stored,
            &out
        ),
        Err(CompareError::NotFloat { .. })
    ));

    // The heatmap of the stored-space error: colour by each pixel's own error.
    compare(&tex_a, &tex_b, &gbuffer, ErrorSpace::Stored, &out).unwrap();
    let hi = errors.iter().copied().fold(0.0, f32::max);
    let settings = HeatmapSettings {
        source: HeatmapSource::Error,
        lo: 0.0,
        hi,
        opacity: 1.0,
        color_bar: false,
    };
    let format = wgpu::TextureFormat::Rgba8UnormSrgb;
    let divergence = divergence_pass(ctx, TileSize::T8x8);
    let inputs = HeatmapInputs {
        material_ids: &gbuffer.material,
        tiles: &divergence.tiles,
        tile: TileSize::T8x8,
        error: &out.error,
    };
    let out = draw_heatmap(ctx, format, SIZE, &inputs, &settings);
    assert_overlay("error heatmap", &words, &out, COLOR_STEPS, |i, dst| {
        blended(errors[i] / hi, 1.0, dst, format)
    });
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

#[test]
fn host_mirrors_match_the_shaders() {
    let lib = ShaderLibrary::embedded();
    let heatmap = lib.validate("heatmap.wgsl", &Defines::new()).unwrap();
    assert_mirrors::<HeatmapUniform>(&heatmap, "Heatmap");
    let image_error = lib.validate("image_error.wgsl", &Defines::new()).unwrap();
    assert_mirrors::<ImageErrorUniform>(&image_error, "Params");
    assert_eq!(wgsl_size(&image_error, "Partial") as u64, PARTIAL_BYTES);

    // The divergence shader declares exactly the tile sizes the host has.
    let header = lib.header("divergence.wgsl").unwrap();
    let mut declared = header.define_sets();
    let mut host: Vec<Defines> = TileSize::ALL.iter().map(|t| t.defines()).collect();
    declared.sort();
    host.sort();
    assert_eq!(declared, host);
    for set in &host {
        lib.validate("divergence.wgsl", set)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    let frame = neurotex::gpu::shader::shader_source("common/frame.wgsl").unwrap();
    assert!(frame.contains(&format!("const NO_MATERIAL: u32 = {NO_MATERIAL:#X}u;")));
    let divergence = neurotex::gpu::shader::shader_source("divergence.wgsl").unwrap();
    assert!(divergence.contains(&format!("const NO_DECODER: u32 = {NO_DECODER:#X}u;")));
}

/// The classify kernel finds exactly the CPU reference's rectangle of every material:
/// pixels without geometry, ids past the material count and the bitangent bit must not
/// matter, and a material with no pixel keeps an empty rectangle. The image holds ids
/// 0..=11 and 0xABCDE: with 11 materials, id 11 is past the count; with 13, material 12
/// has no pixel. The dispatch arguments made from the rectangles equal
/// [`dispatch_args_reference`]'s (an off-screen material gets none). The material
/// targets, filled with ones beforehand, are zero exactly where no material of the count
/// is, and untouched elsewhere (the reference pass has no clear of its own).
#[test]
fn classify_rectangles_and_dispatch_args_equal_the_cpu_reference() {
    let ctx = ctx();
    let words = synthetic_words();
    let gbuffer = gbuffer_with(ctx, SIZE, &words);
    let classify = MaterialClassify::new(ctx).unwrap_or_else(|e| panic!("{e}"));
    for materials in [11, 13] {
        let expected = classify_reference(&words, SIZE, materials);
        // Material 5 fills the bottom-right block, so its rectangle reaches the corner.
        assert_eq!((expected[5].max_x, expected[5].max_y), SIZE);
        assert!(expected[5].min_x_inv >= SIZE.0 - 24 && expected[5].min_y_inv >= SIZE.1 - 16);
        assert!(expected[..11].iter().all(|r| *r != MaterialRect::default()));
        if materials == 13 {
            assert_eq!(
                expected[12],
                MaterialRect::default(),
                "material 12 has no pixel"
            );
        }
        let expected_args = dispatch_args_reference(&expected, SIZE);
        assert!(
            expected_args[..11]
                .iter()
                .all(|a| a[0] > 0 && a[1] > 0 && a[2] == 1)
        );
        let rects = MaterialClassify::rects_buffer(&ctx.device, materials);
        let args = MaterialClassify::args_buffer(&ctx.device, materials);
        let targets = MaterialTargets::new(&ctx.device, SIZE);
        // Stale contents must be cleared by the pass itself.
        ctx.queue.write_buffer(&rects, 0, &[0xAB; 16]);
        submit(ctx, |frame| {
            let colors = [
                &targets.base_color,
                &targets.normal_rm,
                &targets.emissive_ao,
            ]
            .map(|t| layout::clear_color(&t.view, wgpu::Color::WHITE));
            frame.render_pass("test.fill", &colors, None, |_| {});
            classify.record(frame, &gbuffer.material, &targets, &rects, &args)
        });
        for target in [
            &targets.base_color,
            &targets.normal_rm,
            &targets.emissive_ao,
        ] {
            let data = read_texture(ctx, &target.texture, 0, 0).unwrap();
            let texels: Vec<[u16; 4]> = bytemuck::pod_collect_to_vec(&data.bytes);
            for (i, (texel, &word)) in texels.iter().zip(&words).enumerate() {
                let shaded =
                    word != NO_MATERIAL && ((word & MATERIAL_ID_MASK) as usize) < materials;
                let want = if shaded { half::f16::ONE.to_bits() } else { 0 };
                assert_eq!(
                    *texel, [want; 4],
                    "pixel {i} (word {word:#x}), {materials} materials"
                );
            }
        }
        let bytes = neurotex::gpu::read_buffer(ctx, &rects, 0..rects.size()).unwrap();
        let got: Vec<MaterialRect> = bytemuck::pod_collect_to_vec(&bytes);
        assert_eq!(got, expected, "{materials} materials");
        let bytes = neurotex::gpu::read_buffer(ctx, &args, 0..args.size()).unwrap();
        let got: Vec<[u32; 3]> = bytemuck::pod_collect_to_vec(&bytes);
        assert_eq!(
            got, expected_args,
            "{materials} materials' dispatch arguments"
        );
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// The tonemap pass's compute entry encodes sRGB exactly as the CPU's `SrgbEncoder`: the
/// albedo AOV of a ramp of linear base colours (2,048 f16 values over [0, 1] in red,
/// reversed in green, squared in blue) written into the headless output equals
/// `SrgbEncoder::encode` of every value, byte for byte. The raster entry, drawing the same
/// values into an sRGB render target (the adapter's encoder), stays within one code.
#[test]
fn compute_tonemap_encodes_like_the_cpu_encoder() {
    use neurotex::render::gpu_types::FrameUniform;
    use neurotex::render::headless::{OUTPUT_FORMAT, output_texture, output_view};
    use neurotex::render::passes::tonemap::{TonemapInputs, TonemapPass};
    use neurotex::render::targets::{MaterialTargets, format};
    use neurotex::texture::srgb::SrgbEncoder;
    use wgpu::util::DeviceExt;

    let ctx = ctx();
    let size = (64, 32);
    let n = (size.0 * size.1) as usize;
    let values: Vec<[f32; 3]> = (0..n)
        .map(|i| {
            let v = half::f16::from_f32(i as f32 / (n - 1) as f32).to_f32();
            let q = |x: f32| half::f16::from_f32(x).to_f32();
            [v, q(1.0 - v), q(v * v)]
        })
        .collect();
    let texels: Vec<half::f16> = values
        .iter()
        .flat_map(|c| [c[0], c[1], c[2], 1.0].map(half::f16::from_f32))
        .collect();
    let mut materials = MaterialTargets::new(&ctx.device, size);
    materials.base_color = target(upload(
        ctx,
        "test.base_color",
        size,
        format::MATERIAL_TARGET,
        bytemuck::cast_slice(&texels),
    ));
    let gbuffer = gbuffer_with(ctx, size, &vec![0; n]);
    let mut uniform: FrameUniform = bytemuck::Zeroable::zeroed();
    uniform.aov = neurotex::render::Aov::Albedo as u32;
    let frame = ctx
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("test.frame"),
            contents: bytemuck::bytes_of(&uniform),
            usage: wgpu::BufferUsages::UNIFORM,
        });
    let inputs = TonemapInputs {
        frame: &frame,
        hdr: &materials.emissive_ao,
        materials: &materials,
        material_ids: &gbuffer.material,
    };
    let mut pass = TonemapPass::new(ctx, OUTPUT_FORMAT).unwrap_or_else(|e| panic!("{e}"));
    let computed = output_texture(
        &ctx.device,
        "test.computed",
        size,
        wgpu::TextureUsages::COPY_SRC,
    );
    assert!(TonemapPass::computes(&computed));
    let drawn = ctx
        .device
        .create_texture(&neurotex::gpu::layout::texture_2d(
            "test.drawn",
            size,
            1,
            OUTPUT_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        ));
    assert!(!TonemapPass::computes(&drawn));
    let drawn_view = drawn.create_view(&Default::default());
    submit(ctx, |f| {
        pass.record(f, &inputs, &output_view(&computed));
        pass.record(f, &inputs, &drawn_view);
    });
    let computed = read_texture(ctx, &computed, 0, 0).unwrap().bytes;
    let drawn = read_texture(ctx, &drawn, 0, 0).unwrap().bytes;
    let encoder = SrgbEncoder::new();
    let expected: Vec<u8> = values
        .iter()
        .flat_map(|c| {
            [c[0], c[1], c[2]]
                .map(|v| encoder.encode(v))
                .into_iter()
                .chain([255])
        })
        .collect();
    assert_eq!(computed, expected, "compute tonemap against SrgbEncoder");
    let off = drawn
        .iter()
        .zip(&expected)
        .map(|(a, b)| a.abs_diff(*b))
        .max();
    assert!(
        off <= Some(1),
        "raster tonemap is {off:?} codes off the CPU encoder"
    );
    assert_eq!(ctx.uncaptured_error_count(), 0);
}
