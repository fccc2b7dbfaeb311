//! GPU tests of the NTC render passes (one binary, one adapter: lavapipe in CI) against
//! the CPU reference in `render::ntc_gpu`, on a synthetic package (random decoder weights
//! and latents, no training) and a synthetic G-buffer written with `write_texture`:
//! the decode pass per kernel and tile size (stochastic and nearest), the stochastic
//! choice's average against the trilinear filter, the bake against the CPU decode, and
//! the host ↔ WGSL struct sizes.

use glam::{Vec2, Vec3};
use half::f16;
use neurotex::cluster::Strategy;
use neurotex::gpu::mirror::assert_mirrors;
use neurotex::gpu::shader::ShaderLibrary;
use neurotex::gpu::upload::write_level;
use neurotex::gpu::{GpuContext, read_texture};
use neurotex::ntc::format::{NtcMaterial, NtcPackage};
use neurotex::ntc::model::{
    DecoderWeights, LatentLayout, NtcConfig, Preset, SplitMix64, full_mip_count,
};
use neurotex::ntc::quant;
use neurotex::ntc::train::Quality;
use neurotex::render::gpu_types::{FrameUniform, MaterialData};
use neurotex::render::ntc_gpu::{
    NO_DECODER, NtcCpuReference, NtcMaterialGpu, NtcMipGpu, NtcRenderError, NtcSceneGpu, PixelInput,
};
use neurotex::render::passes::ntc_bake::{BakeKernel, BakeParams, NtcBakePass};
use neurotex::render::passes::ntc_decode::{
    DecodeInputs, DecodeParams, DecodeSettings, NtcDecodePass, NtcKernel, sorted_runs,
};
use neurotex::render::scene_gpu::{SceneGpu, UploadOptions};
use neurotex::render::targets::{GBuffer, MaterialTargets, Target, format};
use neurotex::scene::{Aabb, Filter, Material, MipFilter, Sampling, Scene, WrapMode};
use neurotex::screen::tiles::TileSize;
use neurotex::texture::{CHANNELS, ChannelMask, SceneTextures};
use wgpu::util::DeviceExt as _;

use crate::common::{ctx, submit};

/// Side of the blue-noise texture (WGSL `BLUE_NOISE_SIZE`).
const NOISE: u32 = 64;

/// A small model whose widths suit every kernel (hidden widths multiples of 16).
fn config() -> NtcConfig {
    NtcConfig {
        features: 8,
        hidden: vec![32, 32],
        ..NtcConfig::default()
    }
}

/// Three package materials, two decoders: `alpha` (16², decoder 0, every channel),
/// `beta` (24×12, decoder 1, only base colour, alpha and roughness present) and `gamma`
/// (8², decoder 0). Random He-initialised weights with output biases of 0.5 (so that
/// few outputs clamp), random latent codes.
fn package() -> NtcPackage {
    let config = config();
    let mut package = NtcPackage::new(config.clone()).expect("package");
    let mut rng = SplitMix64::new(0x5EED);
    for _ in 0..2 {
        let mut weights = DecoderWeights::init(&config, &mut rng).expect("init");
        let params = weights.params_mut();
        let n = params.len();
        for b in &mut params[n - 16..] {
            *b = 0.5;
        }
        package
            .decoders
            .push(quant::decoder_to_f16(weights.params()).expect("f16"));
    }
    let present_beta = ChannelMask(ChannelMask::BASE_COLOR.0 | ChannelMask::ALPHA.0 | (1 << 7));
    for (name, w, h, decoder, present) in [
        ("alpha", 16, 16, 0, ChannelMask::ALL),
        ("beta", 24, 12, 1, present_beta),
        ("gamma", 8, 8, 0, ChannelMask::ALL),
    ] {
        let layout = LatentLayout::new(w, h, full_mip_count(w, h), Preset::High, config.features)
            .expect("layout");
        let words = layout.packed_words(config.latent_bits);
        // 8 features × 4 bits fill each word: every u32 is a valid texel.
        let latents = (0..words).map(|_| rng.next_u64() as u32).collect();
        package.materials.push(NtcMaterial {
            name: name.into(),
            present,
            layout,
            decoder,
            constants: [1.0; CHANNELS],
            quality: Quality::default(),
            latents,
        });
    }
    package.validate().expect("valid");
    package
}

/// Scene materials: 0 → `alpha`, 1 → `beta`, 2 untextured, 3 → `gamma`; varied factors,
/// normal scales ≤ 0.6 (so the rebuilt normal's z stays well away from 0, where its
/// square root would amplify tiny differences).
fn scene_materials() -> (Vec<Material>, Vec<Option<u32>>) {
    let m = |base: [f32; 4], rough: f32, metal: f32, emissive: [f32; 3], scale: f32, occ: f32| {
        Material {
            base_color_factor: base,
            roughness_factor: rough,
            metallic_factor: metal,
            emissive_factor: emissive,
            normal_scale: scale,
            occlusion_strength: occ,
            ..Default::default()
        }
    };
    let mut materials = vec![
        m([1.0, 0.9, 0.8, 1.0], 1.0, 0.7, [1.0, 0.5, 0.25], 0.5, 1.0),
        m([0.6, 1.0, 1.0, 0.9], 0.8, 1.0, [0.0; 3], 0.6, 0.5),
        m([0.2, 0.4, 0.6, 1.0], 0.3, 0.1, [2.0, 2.0, 2.0], 1.0, 1.0),
        m([1.0; 4], 0.5, 0.5, [0.3, 0.3, 0.3], 0.4, 0.8),
    ];
    // Every wrapping on each axis (the G-buffers' UVs reach past [0, 1]) and every
    // filter: nearest texels when minified, no mipmapping, a nearest mip.
    materials[1].sampling = Sampling {
        wrap: [WrapMode::ClampToEdge, WrapMode::MirroredRepeat],
        min: Filter::Nearest,
        ..Default::default()
    };
    materials[3].sampling = Sampling {
        wrap: [WrapMode::MirroredRepeat, WrapMode::ClampToEdge],
        mag: Filter::Nearest,
        mipmap: MipFilter::Off,
        ..Default::default()
    };
    materials[0].sampling.mipmap = MipFilter::Nearest;
    (materials, vec![Some(0), Some(1), None, Some(2)])
}

fn scene(materials: Vec<Material>) -> Scene {
    Scene {
        source: "synthetic".into(),
        meshes: vec![],
        instances: vec![],
        materials,
        cameras: vec![],
        bounds: Aabb {
            min: Vec3::ZERO,
            max: Vec3::ZERO,
        },
        warnings: vec![],
        buffers: vec![],
    }
}

/// The synthetic G-buffer on the host, already rounded to the texture formats.
struct HostGBuffer {
    size: (u32, u32),
    words: Vec<u32>,
    uv: Vec<[f32; 2]>,
    grad: Vec<[f32; 4]>,
    normal_tangent: Vec<[f32; 4]>,
}

fn round_f16(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

fn oct_encode(n: Vec3) -> Vec2 {
    let p = Vec2::new(n.x, n.y) / (n.x.abs() + n.y.abs() + n.z.abs());
    if n.z >= 0.0 {
        return p;
    }
    let s = Vec2::new(p.x.signum(), p.y.signum());
    (Vec2::ONE - Vec2::new(p.y.abs(), p.x.abs())) * s
}

fn random_unit(rng: &mut SplitMix64) -> Vec3 {
    loop {
        let v = Vec3::new(
            rng.uniform(-1.0, 1.0) as f32,
            rng.uniform(-1.0, 1.0) as f32,
            rng.uniform(-1.0, 1.0) as f32,
        );
        if (0.1..1.0).contains(&v.length_squared()) {
            return v.normalize();
        }
    }
}

/// Pixels cycle through the four materials and "no geometry"; uv in [−1.5, 2.5) (wrap),
/// LODs in [−1, 5.5) along a random direction, random frames and bitangent signs.
fn random_gbuffer(
    size: (u32, u32),
    package: &NtcPackage,
    map: &[Option<u32>],
    seed: u64,
) -> HostGBuffer {
    random_gbuffer_with(size, package, map, seed, |x, y, coin| {
        (x / 5 + y / 3 + coin) % 5
    })
}

/// [`random_gbuffer`] with pixel `(x, y)`'s material from `id(x, y, coin)` (`coin`: a
/// random 0 or 1; 4 = no geometry).
fn random_gbuffer_with(
    size: (u32, u32),
    package: &NtcPackage,
    map: &[Option<u32>],
    seed: u64,
    id: impl Fn(u32, u32, u32) -> u32,
) -> HostGBuffer {
    let mut rng = SplitMix64::new(seed);
    let n = (size.0 * size.1) as usize;
    let mut g = HostGBuffer {
        size,
        words: Vec::with_capacity(n),
        uv: Vec::with_capacity(n),
        grad: Vec::with_capacity(n),
        normal_tangent: Vec::with_capacity(n),
    };
    for i in 0..n {
        let (x, y) = (i as u32 % size.0, i as u32 / size.0);
        let id = id(x, y, rng.below(2) as u32);
        let sign = if rng.below(2) == 1 { 0x8000_0000 } else { 0 };
        g.words.push(if id == 4 { u32::MAX } else { id | sign });
        let (w, h) = map
            .get(id as usize)
            .copied()
            .flatten()
            .map_or((16, 16), |p| {
                let l = &package.materials[p as usize].layout;
                (l.width(), l.height())
            });
        g.uv.push([rng.uniform(-1.5, 2.5) as f32, rng.uniform(-1.5, 2.5) as f32]);
        let lod = rng.uniform(-1.0, 5.5);
        let angle = rng.uniform(0.0, std::f64::consts::TAU);
        let len = 2f64.powf(lod);
        let grad = [
            len * angle.cos() / f64::from(w),
            len * angle.sin() / f64::from(h),
            -0.5 * len * angle.sin() / f64::from(w),
            0.5 * len * angle.cos() / f64::from(h),
        ];
        g.grad.push(grad.map(|v| round_f16(v as f32)));
        let nrm = random_unit(&mut rng);
        let t = random_unit(&mut rng).cross(nrm).normalize();
        let (a, b) = (oct_encode(nrm), oct_encode(t));
        g.normal_tangent.push([a.x, a.y, b.x, b.y].map(round_f16));
    }
    g
}

fn f16_bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values
        .flat_map(|v| f16::from_f32(v).to_le_bytes())
        .collect()
}

fn upload_gbuffer(ctx: &GpuContext, g: &HostGBuffer) -> GBuffer {
    let target = |label, format, usage| Target::new(&ctx.device, label, g.size, format, usage);
    let writable = |label, format| target(label, format, wgpu::TextureUsages::COPY_DST);
    let gb = GBuffer {
        normal_tangent: writable("test.normal_tangent", format::NORMAL_TANGENT),
        uv: writable("test.uv", format::UV),
        uv_grad: writable("test.uv_grad", format::UV_GRAD),
        material: writable("test.material", format::MATERIAL),
        motion: writable("test.motion", format::MOTION),
        depth: target("test.depth", format::DEPTH, wgpu::TextureUsages::empty()),
        ids: None,
    };
    let write = |target: &Target, bytes: &[u8]| write_level(&ctx.queue, &target.texture, 0, bytes);
    write(
        &gb.normal_tangent,
        &f16_bytes(g.normal_tangent.iter().flatten().copied()),
    );
    write(&gb.uv, bytemuck::cast_slice(&g.uv));
    write(&gb.uv_grad, &f16_bytes(g.grad.iter().flatten().copied()));
    write(&gb.material, bytemuck::cast_slice(&g.words));
    gb
}

/// A 64² R32Float noise texture: a random permutation of the ranks (r + ½) / 4096, like
/// the real blue-noise texture's values (uniform, each once) without its spatial order.
fn noise_texture(ctx: &GpuContext) -> (Vec<f32>, wgpu::TextureView) {
    let count = (NOISE * NOISE) as usize;
    let mut values: Vec<f32> = (0..count)
        .map(|r| (r as f32 + 0.5) / count as f32)
        .collect();
    let mut rng = SplitMix64::new(42);
    for i in (1..count).rev() {
        values.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let texture = ctx.device.create_texture_with_data(
        &ctx.queue,
        &wgpu::TextureDescriptor {
            label: Some("test.blue_noise"),
            size: wgpu::Extent3d {
                width: NOISE,
                height: NOISE,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::R32Float,
            usage: wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        },
        wgpu::util::TextureDataOrder::LayerMajor,
        bytemuck::cast_slice(&values),
    );
    (values, texture.create_view(&Default::default()))
}

/// `blue_noise(tex, pixel, frame, channel)` of `shaders/common/blue_noise.wgsl`.
fn blue_noise(values: &[f32], pixel: (u32, u32), frame: u32, channel: u32) -> f32 {
    let px = (pixel.0 + channel * 49) % NOISE;
    let py = (pixel.1 + channel * 37) % NOISE;
    let v = values[(py * NOISE + px) as usize];
    const WEYL: [u32; 3] = [3_518_319_155, 2_882_110_345, 2_360_945_575];
    let weyl =
        (frame.wrapping_mul(WEYL[(channel % 3) as usize]) >> 8) as f32 * (1.0 / 16_777_216.0);
    let s = v + weyl;
    s - s.floor()
}

/// Everything one decode run needs.
struct Fixture {
    package: NtcPackage,
    map: Vec<Option<u32>>,
    materials: Vec<MaterialData>,
    scene: SceneGpu,
    ntc: NtcSceneGpu,
    noise_values: Vec<f32>,
    noise: wgpu::TextureView,
}

fn fixture() -> Fixture {
    let ctx = ctx();
    let package = package();
    let (materials, map) = scene_materials();
    let gpu_materials = MaterialData::table(&materials);
    let textures = SceneTextures::load(&materials, &Default::default()).expect("texture sets");
    let scene =
        SceneGpu::upload(&ctx.device, &ctx.queue, &scene(materials), &textures, 1).expect("scene");
    let ntc = NtcSceneGpu::upload(ctx, &package, &map).expect("ntc upload");
    let (noise_values, noise) = noise_texture(ctx);
    Fixture {
        package,
        map,
        materials: gpu_materials,
        scene,
        ntc,
        noise_values,
        noise,
    }
}

/// Run `pass` on `gbuffer` for each frame in `frames`; returns, per frame, the three
/// targets as RGBA f32 per pixel.
fn decode_frames(
    f: &Fixture,
    pass: &mut NtcDecodePass,
    g: &HostGBuffer,
    settings: &DecodeSettings,
    frames: std::ops::Range<u32>,
) -> Vec<[Vec<f32>; 3]> {
    let ctx = ctx();
    let device = &ctx.device;
    let gbuffer = upload_gbuffer(ctx, g);
    let targets = MaterialTargets::new(device, g.size);
    let frame_buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.frame"),
        size: std::mem::size_of::<FrameUniform>() as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let inputs = DecodeInputs {
        frame: &frame_buffer,
        materials: &f.scene.material_buffer,
        gbuffer: &gbuffer,
        blue_noise: &f.noise,
        package: &f.ntc,
        settings,
    };
    frames
        .map(|frame| {
            let mut uniform: FrameUniform = bytemuck::Zeroable::zeroed();
            uniform.frame_index = frame;
            ctx.queue
                .write_buffer(&frame_buffer, 0, bytemuck::bytes_of(&uniform));
            submit(ctx, |frame| pass.record(frame, &inputs, &targets)).expect("record");
            [
                &targets.base_color,
                &targets.normal_rm,
                &targets.emissive_ao,
            ]
            .map(|t| {
                read_texture(ctx, &t.texture, 0, 0)
                    .expect("read")
                    .to_f32()
                    .expect("f32")
            })
        })
        .collect()
}

/// Pixel `i`'s G-buffer input for frame `frame`.
fn pixel_input(f: &Fixture, g: &HostGBuffer, i: usize, frame: u32) -> PixelInput {
    let pixel = (i as u32 % g.size.0, i as u32 / g.size.0);
    PixelInput {
        word: g.words[i],
        uv: g.uv[i],
        uv_grad: g.grad[i],
        normal_tangent: g.normal_tangent[i],
        xi: [0, 1, 2].map(|k| blue_noise(&f.noise_values, pixel, frame, k)),
    }
}

/// The decode pass equals the CPU reference for every supported kernel and tile size,
/// stochastic (frame 3) and nearest, on a 45 × 37 screen (not a multiple of any tile).
///
/// Pixels whose mip or texel choice lies within 2e-3 of a decision boundary (ξ0 against
/// frac(lod), a texel coordinate against an integer) are skipped: the GPU's log2 and the
/// f32 products may tip them either way. They are a few percent at most.
///
/// Tolerances: the targets are Rgba16Float, so every value carries a rounding of up to
/// one f16 ulp (2⁻¹⁰ relative: lavapipe does not round the f32 → f16 store to nearest).
/// On top of that, f32: 1e-4 absolute (the decoder agrees with the f64 reference to
/// ~1e-6; sRGB `pow`, `normalize` and `log2` differ by a few ulps; measured: 0). f16:
/// 2e-2 absolute — each f16 dot product of n ≤ 32 terms rounds with a relative error of
/// up to n · 2⁻¹¹ of Σ|wᵢxᵢ| (He-initialised weights give Σ|wᵢxᵢ| of a few units), over
/// three layers; measured on lavapipe: 5e-3.
#[test]
fn decode_matches_cpu_reference_for_every_kernel_and_tile() {
    let ctx = ctx();
    let f = fixture();
    let reference = NtcCpuReference::new(&f.package, &f.map, &f.materials).expect("reference");
    // Several decoders in most tiles, and one decoder (or none) per 16 × 16 tile.
    let mixed = random_gbuffer((45, 37), &f.package, &f.map, 7);
    let coherent = random_gbuffer_with((45, 37), &f.package, &f.map, 9, |x, y, _| {
        [0, 1, 3, 2, 4][((x / 16 + 2 * (y / 16)) % 5) as usize]
    });
    let (kernels, skipped): (Vec<NtcKernel>, Vec<NtcKernel>) = NtcKernel::ALL
        .into_iter()
        .partition(|k| k.supported(&ctx.granted));
    assert!(kernels.contains(&NtcKernel::F32));
    // A kernel the adapter lacks features for is not checked here (bench decode checks it
    // on the device that has them); say which, so that a skip is never silent.
    for kernel in skipped {
        eprintln!(
            "SKIPPED {kernel}: this adapter lacks {}",
            kernel.missing(&ctx.granted).join(", ")
        );
    }
    for kernel in kernels {
        let tolerance = if kernel == NtcKernel::F32 { 1e-4 } else { 2e-2 };
        // The sorted kernels sort in 8 × 8 tiles whatever the tile.
        let tiles: &[TileSize] = if kernel.is_sorted() {
            &[TileSize::T8x8]
        } else {
            &TileSize::ALL
        };
        for &tile in tiles {
            let mut pass = match NtcDecodePass::new(ctx, &f.package.config, kernel, tile) {
                Ok(pass) => pass,
                // A model or adapter limit (not a feature) may rule a combination out; it
                // must say so.
                Err(e @ NtcRenderError::KernelUnavailable { .. })
                    if e.to_string().contains("workgroup") =>
                {
                    eprintln!("{kernel} {tile}: {e}");
                    continue;
                }
                Err(e) => panic!("{kernel} {tile}: {e}"),
            };
            assert_eq!((pass.kernel(), pass.tile()), (kernel, tile));
            for (name, g) in [("mixed", &mixed), ("coherent", &coherent)] {
                for stochastic in [true, false] {
                    let settings = DecodeSettings {
                        stochastic,
                        lod_bias: 0.0,
                    };
                    let what = format!("{kernel} {tile} {name} stochastic={stochastic}");
                    compare_decode(&f, &reference, &mut pass, g, &settings, tolerance, &what);
                }
            }
        }
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// Decode frame 3 of `g` with `pass` and compare every pixel with the CPU reference
/// (within `tolerance` beyond f16 storage; pixels within 2e-3 of a choice boundary
/// skipped, at most 5 %).
fn compare_decode(
    f: &Fixture,
    reference: &NtcCpuReference<'_>,
    pass: &mut NtcDecodePass,
    g: &HostGBuffer,
    settings: &DecodeSettings,
    tolerance: f32,
    what: &str,
) {
    let frame = 3;
    let out = decode_frames(f, pass, g, settings, frame..frame + 1);
    let mut worst = 0.0f32;
    let mut skipped = 0;
    for i in 0..g.words.len() {
        let input = pixel_input(f, g, i, frame);
        if let Some(p) = f
            .map
            .get((input.word & 0xF_FFFF) as usize)
            .copied()
            .flatten()
            && input.word != u32::MAX
        {
            let layout = &f.package.materials[p as usize].layout;
            // Only the margin is read, which the wrapping does not change.
            let c = neurotex::render::ntc_gpu::choose_texel(
                layout,
                &Default::default(),
                input.uv,
                input.uv_grad,
                settings,
                input.xi,
            );
            if c.margin < 2e-3 {
                skipped += 1;
                continue;
            }
        }
        let expected = reference.pixel(&input, settings).expect("cpu");
        for (t, target) in expected.iter().enumerate() {
            for (k, &e) in target.iter().enumerate() {
                let got = out[0][t][4 * i + k];
                let err = (got - e).abs() - e.abs() / 1024.0;
                worst = worst.max(err);
                assert!(
                    err <= tolerance,
                    "{what}: pixel {i} target {t} channel {k}: GPU {got}, CPU {e}"
                );
            }
        }
    }
    assert!(skipped * 20 < g.words.len(), "{skipped} pixels skipped");
    eprintln!("{what}: max error {worst:.2e} beyond f16 storage, {skipped} pixels skipped");
}

/// The sorted kernels' runs and slots equal a CPU sort of the same frame: per decoder
/// its pixel count and first slot (counts rounded up to the run alignment, prefix sums
/// in decoder order), and each run's slots hold exactly its decoder's pixels, each once.
#[test]
fn sorted_runs_match_a_cpu_sort() {
    let ctx = ctx();
    let f = fixture();
    let g = random_gbuffer((45, 37), &f.package, &f.map, 13);
    let decoder_of_pixel: Vec<u32> = g
        .words
        .iter()
        .map(|&w| {
            if w == u32::MAX {
                return NO_DECODER;
            }
            f.map
                .get((w & 0xF_FFFF) as usize)
                .copied()
                .flatten()
                .map_or(NO_DECODER, |p| f.package.materials[p as usize].decoder)
        })
        .collect();
    let decoders = f.package.decoders.len();
    assert!(decoder_of_pixel.contains(&NO_DECODER));
    let mut tested = 0;
    for kernel in NtcKernel::ALL
        .into_iter()
        .filter(|k| k.is_sorted() && k.supported(&ctx.granted))
    {
        let expected = sorted_runs(
            &decoder_of_pixel,
            decoders,
            kernel.run_align().expect("a sorted kernel"),
        );
        // Both decoders have pixels, and some pixels have none.
        assert!(
            expected[..decoders].iter().all(|r| r[1] > 0),
            "{expected:?}"
        );
        let mut pass = NtcDecodePass::new(ctx, &f.package.config, kernel, TileSize::T8x8)
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        assert_eq!(pass.read_sorted_runs(ctx).expect("read"), None);
        // Two frames: the scan re-zeroes the counts for the next one.
        decode_frames(&f, &mut pass, &g, &DecodeSettings::default(), 0..2);
        let sorted = pass.read_sorted_runs(ctx).expect("read").expect("runs");
        assert_eq!(sorted.runs, expected, "{kernel}");
        for (d, run) in expected[..decoders].iter().enumerate() {
            let (first, count) = (run[0] as usize, run[1] as usize);
            let mut got: Vec<u32> = sorted.slots[first..first + count].to_vec();
            got.sort_unstable();
            let mut want: Vec<u32> = (0..g.words.len())
                .filter(|&i| decoder_of_pixel[i] == d as u32)
                .map(|i| ((i as u32 / g.size.0) << 16) | (i as u32 % g.size.0))
                .collect();
            want.sort_unstable();
            assert_eq!(got, want, "{kernel}: decoder {d}'s run");
        }
        tested += 1;
    }
    eprintln!("{tested} sorted kernels checked");
    // The CPU sort itself: aligned starts, counts, the total.
    assert_eq!(
        sorted_runs(&[1, 0, NO_DECODER, 1, 7], 2, 4),
        vec![[0, 1], [4, 2], [8, 0]]
    );
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// Over many frames and many pixels, the stochastic choice averages to the CPU trilinear
/// filter of decoded texels (bilinear in each mip with wrap addressing, linear across
/// mips) for the linear channels: alpha, roughness, metallic (each × its factor).
///
/// Four 20 × 16 blocks of pixels share one (material, uv, lod) each; 48 frames. Every
/// pixel's (ξ0, ξ1, ξ2) come from three distant texels of a random permutation, and
/// frames add the R3 sequence's offsets, so each pixel's (ξ0, ξ1, ξ2) are jointly
/// equidistributed over frames and the pixels decorrelate them further. The mean of 320 pixels × 48
/// frames then has a standard error below 0.5 Δ / √320 ≈ 0.028 Δ for neighbouring texel
/// values that differ by Δ (measured Δ here ≲ 0.3), so 0.02 is over 2σ of the worst
/// case and far below a wrong mip or a half-texel shift (errors of order Δ).
#[test]
fn stochastic_choice_averages_to_trilinear() {
    let ctx = ctx();
    let f = fixture();
    let reference = NtcCpuReference::new(&f.package, &f.map, &f.materials).expect("reference");
    let size = (40, 32);
    // (scene material, uv, lod)
    let blocks = [
        (0u32, [0.37f32, 0.61f32], 1.3f32),
        (1, [0.13, 0.82], 0.6),
        (3, [0.71, 0.29], 1.5),
        (0, [0.52, 0.05], 2.7),
    ];
    let mut g = random_gbuffer(size, &f.package, &f.map, 11);
    let block_of = |i: usize| {
        let (x, y) = (i as u32 % size.0, i as u32 / size.0);
        (x / 20 + 2 * (y / 16)) as usize
    };
    for i in 0..g.words.len() {
        let (m, uv, lod) = blocks[block_of(i)];
        let layout = &f.package.materials[f.map[m as usize].expect("textured") as usize].layout;
        g.words[i] = m;
        g.uv[i] = uv;
        let len = 2f32.powf(lod);
        g.grad[i] = [len / layout.width() as f32, 0.0, 0.0, 0.0].map(round_f16);
    }
    let mut pass =
        NtcDecodePass::new(ctx, &f.package.config, NtcKernel::F32, TileSize::T8x8).expect("pass");
    let frames = 48;
    let out = decode_frames(&f, &mut pass, &g, &DecodeSettings::default(), 0..frames);
    for (b, &(m, uv, _)) in blocks.iter().enumerate() {
        let p = f.map[m as usize].expect("textured") as usize;
        let layout = &f.package.materials[p].layout;
        // The LOD as the GPU computes it from the stored (f16) derivative.
        let i0 = (0..g.words.len())
            .find(|&i| block_of(i) == b)
            .expect("pixel");
        let lod = (g.grad[i0][0] * layout.width() as f32).log2();
        // What the material's sampling filters: mips, then texels within each.
        let sampling = f.materials[m as usize].sampling();
        let base = lod.floor() as usize;
        let frac = f64::from(lod) - base as f64;
        let mips: Vec<(usize, f64)> = match sampling.mipmap {
            MipFilter::Linear => vec![(base, 1.0 - frac), (base + 1, frac)],
            MipFilter::Nearest => vec![(lod.round_ties_even() as usize, 1.0)],
            MipFilter::Off => vec![(0, 1.0)],
        };
        let filter = if lod > 0.0 {
            sampling.min
        } else {
            sampling.mag
        };
        let mut expected = [0.0f64; 3];
        for (mip, mip_weight) in mips {
            let (w, h) = layout.mip_size(mip).expect("mip");
            let (u, v) = (
                f64::from(uv[0]) * f64::from(w),
                f64::from(uv[1]) * f64::from(h),
            );
            let taps: Vec<(i64, i64, f64)> = match filter {
                Filter::Nearest => vec![(u.floor() as i64, v.floor() as i64, 1.0)],
                Filter::Linear => {
                    let (cx, cy) = (u - 0.5, v - 0.5);
                    let (fx, fy) = (cx - cx.floor(), cy - cy.floor());
                    let (x0, y0) = (cx.floor() as i64, cy.floor() as i64);
                    vec![
                        (x0, y0, (1.0 - fx) * (1.0 - fy)),
                        (x0 + 1, y0, fx * (1.0 - fy)),
                        (x0, y0 + 1, (1.0 - fx) * fy),
                        (x0 + 1, y0 + 1, fx * fy),
                    ]
                }
            };
            for (x, y, weight) in taps {
                let x = sampling.wrap[0].texel(x, w);
                let y = sampling.wrap[1].texel(y, h);
                let c = reference.decode_texel(p, mip, x, y).expect("decode");
                for (e, ch) in expected.iter_mut().zip([3, 7, 8]) {
                    *e += mip_weight * weight * f64::from(c[ch]);
                }
            }
        }
        let md = &f.materials[m as usize];
        let factors = [
            md.base_color_factor[3],
            md.roughness_factor,
            md.metallic_factor,
        ];
        let mut sums = [0.0f64; 3];
        let mut count = 0.0;
        for frame in &out {
            for i in (0..g.words.len()).filter(|&i| block_of(i) == b) {
                sums[0] += f64::from(frame[0][4 * i + 3]);
                sums[1] += f64::from(frame[1][4 * i + 2]);
                sums[2] += f64::from(frame[1][4 * i + 3]);
                count += 1.0;
            }
        }
        for k in 0..3 {
            let mean = sums[k] / count;
            let want = expected[k] * f64::from(factors[k]);
            eprintln!("block {b} channel {k}: mean {mean:.4}, trilinear {want:.4}");
            assert!(
                (mean - want).abs() < 0.02,
                "block {b} channel {k}: stochastic mean {mean}, trilinear {want}"
            );
        }
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// The bake writes the CPU decode of every texel of every mip of every package material,
/// as RGBA8: with the f32 kernel exactly (±1: the GPU's float → unorm conversion may round
/// the other way at a half step), with the f16 FMA kernel within its error bound (the
/// real-time f16 kernels' 2e-2, as 8-bit steps). A channel group the material has none of
/// gets no texture (the CPU decode is neutral there throughout).
#[test]
fn bake_matches_cpu_decode() {
    let _ = env_logger::builder().is_test(true).try_init();
    let ctx = ctx();
    let f = fixture();
    let reference = NtcCpuReference::new(&f.package, &f.map, &f.materials).expect("reference");
    let best =
        NtcBakePass::new(ctx, &f.package.config, None, BakeKernel::default()).expect("bake pass");
    assert_eq!(best.evaluation(), BakeKernel::F32);
    // Over the memory budget: refused before anything is allocated.
    let needed = f.package.upload_bytes(true);
    let err = best
        .bake(ctx, &f.package, &f.ntc, needed - 1)
        .expect_err("over the budget");
    assert!(
        err.to_string()
            .contains(&format!("needs {needed} bytes, limit {}", needed - 1)),
        "{err}"
    );
    // The same package with only base colour and normal: no metallic/emissive group.
    let two_groups =
        crate::common::keeping(&f.package, ChannelMask::BASE_COLOR | ChannelMask::NORMAL);
    let two_groups_reference =
        NtcCpuReference::new(&two_groups, &f.map, &f.materials).expect("reference");
    for kernel in BakeKernel::ALL {
        if let Some(why) = kernel.unavailable(ctx, &f.package.config) {
            eprintln!("{kernel} kernel not tested: {why}");
            continue;
        }
        let bake = NtcBakePass::new(ctx, &f.package.config, None, kernel).expect("bake pass");
        let steps = match kernel {
            BakeKernel::F32 => 1,
            BakeKernel::Fma => (2e-2f32 * 255.0).ceil() as u8,
        };
        for (package, reference, budget) in [
            (&f.package, &reference, needed),
            (&two_groups, &two_groups_reference, u64::MAX),
        ] {
            let worst = bake_matches(ctx, &f.ntc, &bake, package, reference, budget, steps);
            eprintln!("{kernel} kernel: largest difference {worst} (bound {steps})");
        }
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// [`bake_matches_cpu_decode`] for one package and kernel, every byte within `steps` of
/// the CPU decode; returns the largest difference.
fn bake_matches(
    ctx: &GpuContext,
    ntc: &NtcSceneGpu,
    bake: &NtcBakePass,
    package: &NtcPackage,
    reference: &NtcCpuReference,
    budget: u64,
    steps: u8,
) -> u8 {
    let neutral = neurotex::texture::TextureSet::neutral();
    let baked = bake.bake(ctx, package, ntc, budget).expect("bake");
    assert_eq!(baked.sets.len(), package.materials.len());
    let mut worst = 0;
    for (p, set) in baked.sets.iter().enumerate() {
        let m = &package.materials[p];
        assert_eq!(set.name, m.name);
        for mip in 0..m.layout.mips() {
            let expected = reference.bake_mip(p, mip).expect("cpu");
            for (g, texture) in set.textures.iter().enumerate() {
                let has_group = m.present.intersects(ChannelMask::texture_group(g));
                assert_eq!(texture.is_some(), has_group, "`{}` group {g}", m.name);
                let Some(texture) = texture else {
                    let flat = neutral.mips[0].group(g);
                    assert!(expected[g].chunks_exact(4).all(|t| t == flat));
                    continue;
                };
                let got = read_texture(ctx, texture, mip as u32, 0).expect("read");
                assert_eq!(got.bytes.len(), expected[g].len());
                for (i, (&a, &e)) in got.bytes.iter().zip(&expected[g]).enumerate() {
                    worst = worst.max(a.abs_diff(e));
                    assert!(
                        a.abs_diff(e) <= steps,
                        "`{}` mip {mip} group {g} byte {i}: GPU {a}, CPU {e} ({} kernel)",
                        m.name,
                        bake.evaluation()
                    );
                }
            }
        }
    }
    worst
}

/// The transcoded bake (`--transcode bc1|bc7`): block-compressed textures in the formats
/// [`set_formats`] names with full mip chains (down to 1×1, below the block size), the
/// bytes [`package_baked_bytes`] predicts without baking (under a third of RGBA8's),
/// and blocks whose decoded error on the NTC-decoded texels stays within a bound of the
/// CPU reference's (ISPC in the same formats, on the same texels), with and without the
/// groups that need BC7.
#[test]
fn transcoded_bake_is_block_compressed_within_bounds_of_ispc() {
    use neurotex::render::memory::OnLoadMemory;
    use neurotex::render::passes::bcn_encode::GpuBlockFormat;
    use neurotex::render::passes::ntc_bake::{
        Transcode, package_baked_bytes, set_formats, texture_bytes,
    };
    use neurotex::render::transcode::transcode_quality;
    let ctx = ctx();
    let f = fixture();
    let rgba8 = package_baked_bytes(&f.package, None);
    let mut quality = Vec::new();
    for t in Transcode::ALL {
        let bake =
            NtcBakePass::new(ctx, &f.package.config, Some(t), BakeKernel::F32).expect("bake pass");
        assert_eq!(bake.transcode(), Some(t));
        let baked = bake.bake(ctx, &f.package, &f.ntc, u64::MAX).expect("bake");
        let mut bytes = 0;
        for (set, m) in baked.sets.iter().zip(&f.package.materials) {
            let formats = set_formats(m.present, Some(t));
            assert!(
                m.layout
                    .mip_size(m.layout.mips() - 1)
                    .is_some_and(|(w, _)| w < 4)
            );
            for (g, texture) in set.textures.iter().enumerate() {
                let (Some(texture), Some((format, _))) = (texture, formats[g]) else {
                    assert!(texture.is_none() && formats[g].is_none());
                    continue;
                };
                assert_eq!(texture.format(), format, "`{}` group {g}", m.name);
                assert_eq!(texture.mip_level_count(), m.layout.mips() as u32);
                let size = (texture.width(), texture.height());
                bytes += texture_bytes(texture.format(), size, texture.mip_level_count());
            }
        }
        assert_eq!(bytes, package_baked_bytes(&f.package, Some(t)));
        assert!(bytes * 3 < rgba8, "{t}: {bytes} bytes, RGBA8 {rgba8}");
        // The fixture's materials all have alpha (BC7 for base colour), so BC1 gets
        // content only from the same package without alpha and emissive.
        let opaque = crate::common::keeping(
            &f.package,
            ChannelMask(ChannelMask::ALL.0 & !(ChannelMask::ALPHA.0 | ChannelMask::EMISSIVE.0)),
        );
        // A base colour + normal set holds, transcoded, what its BCn bundle holds.
        let two_groups =
            crate::common::keeping(&f.package, ChannelMask::BASE_COLOR | ChannelMask::NORMAL);
        let bundles = OnLoadMemory::of(&two_groups);
        let bundle = match t {
            Transcode::Bc1 => bundles.bundle_bc1_bc5,
            Transcode::Bc7 => bundles.bundle_bc7_bc5,
        };
        assert_eq!(package_baked_bytes(&two_groups, Some(t)), bundle, "{t}");
        // Its normal group is BC5 (as in either bundle), its third group absent.
        let with_normal = two_groups
            .materials
            .iter()
            .filter(|m| m.present.intersects(ChannelMask::NORMAL));
        assert!(with_normal.clone().count() > 0);
        for m in with_normal {
            let formats = set_formats(m.present, Some(t));
            assert_eq!(
                formats[1],
                Some((wgpu::TextureFormat::Bc5RgUnorm, Some(GpuBlockFormat::Bc5)))
            );
            assert_eq!(formats[2], None);
        }
        for package in [&f.package, &opaque, &two_groups] {
            let q = transcode_quality(ctx, package, &f.ntc, t).expect("quality");
            eprintln!("{t}: GPU {:.2} dB, ISPC {:.2} dB", q.gpu_db, q.ispc_db);
            quality.push(q);
        }
    }
    assert_ne!(
        quality[1], quality[4],
        "BC1 and BC7 encode the opaque package alike"
    );
    // The fixture's package decodes to noise-like texels (random latents), the hardest
    // case for a block encoder. Measured on lavapipe (GPU vs ISPC, the groups each set
    // has): with alpha 20.46 vs 20.44 dB (BC7 throughout either way); opaque, BC1 20.67 vs
    // 20.61 dB (a one-pass BC1 without refinement or three-colour blocks fell outside its
    // bound) and BC7 23.96 vs 24.46 dB (two subsets in two estimated shapes against
    // ISPC's wider search; BC7 in mode 6 alone lost 1–4.5 dB here); base colour + normal
    // (BC5 normals) 18.77 vs 18.69 dB (BC1) and 23.51 vs 24.45 dB (BC7). Wrong blocks (a
    // swapped format, a wrong row pitch or level) fall far below these bounds.
    // In `quality`'s order: bc1 with alpha, bc1 opaque, bc1 base colour + normal, then
    // the same three for bc7.
    for (q, margin) in quality.iter().zip([1.0, 0.05, 1.0, 1.0, 1.0, 1.0]) {
        assert!(
            q.gpu_db > q.ispc_db - margin && q.gpu_db > 15.0,
            "{}: GPU {} dB, ISPC {} dB",
            q.transcode,
            q.gpu_db,
            q.ispc_db
        );
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// A set whose sides are not whole 4×4 blocks cannot be a block-compressed texture: the
/// transcoded bake keeps it uncompressed, with the texels of the plain bake, and
/// transcodes the others; the bytes it predicts follow.
#[test]
fn a_set_of_partial_blocks_is_baked_uncompressed_beside_transcoded_ones() {
    use neurotex::render::passes::ntc_bake::{Transcode, package_baked_bytes, set_formats};
    let ctx = ctx();
    let f = fixture();
    let mut package = f.package.clone();
    let features = package.config.features;
    let gamma = package
        .materials
        .iter_mut()
        .find(|m| m.name == "gamma")
        .expect("gamma");
    gamma.layout =
        LatentLayout::new(6, 10, full_mip_count(6, 10), Preset::High, features).expect("layout");
    gamma.latents = vec![0x9e37_79b9; gamma.layout.packed_words(package.config.latent_bits)];
    package.validate().expect("valid");
    let ntc = NtcSceneGpu::upload(ctx, &package, &f.map).expect("ntc upload");
    let bake = |t| {
        NtcBakePass::new(ctx, &package.config, t, BakeKernel::F32)
            .expect("bake pass")
            .bake(ctx, &package, &ntc, u64::MAX)
            .expect("bake")
    };
    let plain = bake(None);
    let coded = bake(Some(Transcode::Bc1));
    let mut bytes = 0;
    for ((m, plain), coded) in package.materials.iter().zip(&plain.sets).zip(&coded.sets) {
        let whole_blocks = m.name != "gamma";
        let formats = set_formats(m.present, whole_blocks.then_some(Transcode::Bc1));
        for (g, (p, c)) in plain.textures.iter().zip(&coded.textures).enumerate() {
            let (Some(p), Some(c), Some((format, _))) = (p, c, formats[g]) else {
                continue;
            };
            // The plain bake's textures are what an uncompressed set gets.
            let expected = if whole_blocks { format } else { p.format() };
            assert_eq!(c.format(), expected, "`{}` group {g}", m.name);
            assert_eq!(c.format().is_compressed(), whole_blocks, "`{}`", m.name);
            bytes += neurotex::render::passes::ntc_bake::texture_bytes(
                c.format(),
                (c.width(), c.height()),
                c.mip_level_count(),
            );
            if !whole_blocks {
                for mip in 0..m.layout.mips() as u32 {
                    let want = read_texture(ctx, p, mip, 0).expect("read");
                    let got = read_texture(ctx, c, mip, 0).expect("read");
                    assert!(want.bytes == got.bytes, "`{}` group {g} mip {mip}", m.name);
                }
            }
        }
    }
    assert_eq!(bytes, package_baked_bytes(&package, Some(Transcode::Bc1)));
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// A kernel the device lacks is refused with a message naming what is missing.
#[test]
fn unavailable_kernels_say_why() {
    let ctx = ctx();
    let config = config();
    for kernel in NtcKernel::ALL {
        if kernel.supported(&ctx.granted) {
            continue;
        }
        let err =
            NtcDecodePass::new(ctx, &config, kernel, TileSize::T8x8).expect_err("unsupported");
        assert!(
            matches!(err, NtcRenderError::KernelUnavailable { .. }),
            "{err}"
        );
        assert!(err.to_string().contains(kernel.name()), "{err}");
    }
    assert_eq!(NtcKernel::best(&Default::default()), NtcKernel::F32);
    // A material map pointing past the package is an error, not a panic.
    let err = NtcSceneGpu::upload(ctx, &package(), &[Some(7)]).expect_err("bad map");
    assert!(err.to_string().contains("package material 7"), "{err}");
}

/// The host mirrors have the sizes naga computes for their WGSL twins.
#[test]
fn material_table_and_params_match_wgsl() {
    let library = ShaderLibrary::embedded();
    let header = library.header("ntc_decode_tiles.wgsl").expect("header");
    let set = &header.define_sets()[0];
    let module = library
        .validate("ntc_decode_tiles.wgsl", set)
        .expect("validates");
    assert_mirrors::<NtcMaterialGpu>(&module, "NtcMaterial");
    assert_mirrors::<NtcMipGpu>(&module, "NtcMip");
    assert_mirrors::<DecodeParams>(&module, "DecodeParams");
    let header = library.header("ntc_bake.wgsl").expect("header");
    let set = &header.define_sets()[0];
    let module = library.validate("ntc_bake.wgsl", set).expect("validates");
    assert_mirrors::<BakeParams>(&module, "BakeParams");
}

/// A glTF quad textured with `checker.png` (in a fresh folder named after `name`), its
/// start camera, the test package with its material named `checker`, and the
/// scene-material → package-material map (the quad's material is the package's first).
fn checker_quad(
    name: &str,
) -> (
    neurotex::open::OpenedScene,
    neurotex::scene::Camera,
    NtcPackage,
    Vec<Option<u32>>,
) {
    let (_, gltf) = crate::common::checker_quad(name);
    let opened = neurotex::open::open(Some(&gltf)).expect("open");
    let camera = neurotex::open::select_camera(&opened, None).expect("camera");
    let mut package = package();
    package.materials[0].name = "checker".into();
    let map = neurotex::render::ntc_gpu::map_scene_materials(&package, &opened.scene).expect("map");
    (opened, camera, package, map)
}

/// Inference on load end to end: a glTF quad textured with `checker.png` renders (albedo
/// view) with the baked textures of the package material `checker` instead of the
/// original image, without validation errors, and the image changes.
#[test]
fn baked_textures_replace_the_scene_set() {
    use neurotex::render::headless::render_frame;
    use neurotex::render::passes::ntc_bake::NtcBakePass;
    use neurotex::render::{Aov, FrameSettings, MaterialPath, RenderMode};
    let ctx = ctx();
    let (opened, camera, package, map) = checker_quad("ntc_bake_scene");
    assert_eq!(map, vec![Some(0)]);
    let mut renderer = crate::common::renderer(&opened.scene, &UploadOptions::default(), (32, 32));
    let settings = FrameSettings {
        camera,
        lighting: opened.description.lighting,
        aov: Aov::Albedo,
        mode: neurotex::render::RenderMode::Reference,
        passes: Default::default(),
    };
    let before = render_frame(ctx, &mut renderer, &settings)
        .expect("frame")
        .rgba8;
    let ntc = NtcSceneGpu::upload(ctx, &package, &map).expect("upload");
    let bake = NtcBakePass::new(ctx, &package.config, None, BakeKernel::F32).expect("bake pass");
    let baked = bake
        .bake_materials(ctx, &package, &ntc, &renderer.scene)
        .expect("bake");
    assert_eq!(baked.replaced, 1);
    // The renderer's inference-on-load path: the same bake, sampled by the passes.
    renderer
        .set_package(ctx, RenderMode::Ntc(Strategy::Baseline), package, &map)
        .expect("package");
    let mut baked_settings = settings.clone();
    baked_settings.mode = RenderMode::Ntc(Strategy::Baseline);
    baked_settings.passes.inference_on_load = true;
    let after = render_frame(ctx, &mut renderer, &baked_settings).expect("frame");
    assert_eq!(
        after.plan.material,
        MaterialPath::Baked(RenderMode::Ntc(Strategy::Baseline)),
        "{:?}",
        after.plan.fallback
    );
    assert_ne!(before, after.rgba8, "the baked textures were not used");
    let restored = render_frame(ctx, &mut renderer, &settings)
        .expect("frame")
        .rgba8;
    assert_eq!(before, restored);
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// The inspector reads, at a known pixel of a generated scene (a glTF quad whose set the
/// package decodes), what the CPU reference gives: the material, its set and decoder, the
/// tile's decoders, the decode pass's material targets (from the G-buffer read back at
/// that pixel), the reference pass's targets and the per-pixel error as the image-error
/// reference computes them from the frames; and the video memory lists the package.
#[test]
fn inspector_reads_the_cpu_reference_values() {
    use neurotex::render::headless::render_frame;
    use neurotex::render::inspect::InspectSource;
    use neurotex::render::passes::image_error::{ErrorSpace, reference_error};
    use neurotex::render::{Aov, FrameSettings, MaterialPath, RenderMode};
    let ctx = ctx();
    let (opened, camera, package, map) = checker_quad("ntc_inspect");
    let size = (32, 32);
    let mut renderer = crate::common::renderer(&opened.scene, &UploadOptions::default(), size);
    renderer
        .set_package(
            ctx,
            RenderMode::Ntc(Strategy::Baseline),
            package.clone(),
            &map,
        )
        .expect("package");
    let mut settings = FrameSettings::new(camera, opened.description.lighting, Aov::Final);
    settings.mode = RenderMode::Ntc(Strategy::Baseline);
    settings.passes.decode.stochastic = false;
    settings.passes.compare = true;
    let frame = render_frame(ctx, &mut renderer, &settings).expect("frame");
    assert_eq!(
        frame.plan.material,
        MaterialPath::Decode(RenderMode::Ntc(Strategy::Baseline))
    );
    assert!(frame.plan.compare);

    let t = renderer.targets();
    let read = |target: &Target| read_texture(ctx, &target.texture, 0, 0).expect("read");
    let f32s = |target: &Target| read(target).to_f32().expect("f32");
    let at = |v: &[f32], n: usize, i: usize| v[n * i..n * i + n].to_vec();
    let words = read(&t.gbuffer.material).to_u32().expect("words");
    let (uvs, grads, nts) = (
        f32s(&t.gbuffer.uv),
        f32s(&t.gbuffer.uv_grad),
        f32s(&t.gbuffer.normal_tangent),
    );
    let input_at = |i: usize| {
        let (uv, grad, nt) = (at(&uvs, 2, i), at(&grads, 4, i), at(&nts, 4, i));
        PixelInput {
            word: words[i],
            uv: [uv[0], uv[1]],
            uv_grad: [grad[0], grad[1], grad[2], grad[3]],
            normal_tangent: [nt[0], nt[1], nt[2], nt[3]],
            xi: [0.0; 3],
        }
    };
    // A covered pixel near the middle whose texel choice is clear of a boundary (where
    // the GPU's and the CPU's roundings could pick neighbouring texels).
    let layout = &package.materials[0].layout;
    let i = (size.1 / 2 * size.0..size.1 / 2 * size.0 + size.0)
        .map(|i| i as usize)
        .find(|&i| {
            let input = input_at(i);
            // Only the margin is read, which the wrapping does not change.
            let c = neurotex::render::ntc_gpu::choose_texel(
                layout,
                &Default::default(),
                input.uv,
                input.uv_grad,
                &settings.passes.decode,
                input.xi,
            );
            words[i] != u32::MAX && c.margin >= 2e-3
        })
        .expect("a clear pixel on the middle row");
    let pixel = (i as u32 % size.0, i as u32 / size.0);
    let source = InspectSource {
        mode: RenderMode::Ntc(Strategy::Baseline),
        materials: None,
        compared: true,
        error: Some(&t.comparison.error.error),
    };
    let got = renderer
        .inspect_blocking(ctx, pixel, &source)
        .expect("inspect")
        .expect("inside the frame");
    assert_eq!(got.material, Some(0));
    assert_eq!(got.texture_set, Some(0));
    assert_eq!(got.decoder, Some(package.materials[0].decoder));
    assert_eq!(got.tile_decoders, vec![package.materials[0].decoder]);

    // The decode pass's targets: the CPU reference on the G-buffer at the pixel.
    let input = input_at(i);
    let materials = MaterialData::table(&opened.scene.materials);
    let reference = NtcCpuReference::new(&package, &map, &materials).expect("reference");
    let want = reference
        .pixel(&input, &settings.passes.decode)
        .expect("cpu");
    // As the decode tests allow: f16 storage, and the f16 kernels' arithmetic.
    let tolerance = if renderer.kernel() == Some(NtcKernel::F32) {
        1e-4
    } else {
        2e-2
    };
    for (target, (g, w)) in got.decoded.targets().iter().zip(want).enumerate() {
        for k in 0..4 {
            let err = (g[k] - w[k]).abs() - w[k].abs() / 1024.0;
            assert!(
                err <= tolerance,
                "target {target} channel {k}: read {}, CPU {}",
                g[k],
                w[k]
            );
        }
    }
    // The reference texels and the error: the frames' own values at the pixel.
    let reference_texels = got.reference.expect("compared");
    let c = &t.comparison.materials;
    for (target, texel) in [&c.base_color, &c.normal_rm, &c.emissive_ao]
        .into_iter()
        .zip(reference_texels.targets())
    {
        assert_eq!(at(&f32s(target), 4, i), texel.to_vec());
    }
    let (errors, _) = reference_error(
        &f32s(&t.accumulated),
        &f32s(&t.comparison.hdr),
        &words,
        ErrorSpace::SrgbEncoded,
    );
    let e = got.error.expect("measured");
    assert!(
        (e - errors[i]).abs() <= 1e-5 + errors[i] * 1e-4,
        "error {e}, CPU {}",
        errors[i]
    );

    // Outside the frame: nothing.
    assert!(
        renderer
            .inspect_blocking(ctx, size, &source)
            .expect("inspect")
            .is_none()
    );
    let memory = renderer.source_memory();
    let modes: Vec<RenderMode> = memory.iter().map(|m| m.mode).collect();
    assert_eq!(
        modes,
        [RenderMode::Reference, RenderMode::Ntc(Strategy::Baseline)]
    );
    assert!(memory[1].package.is_some_and(|b| b > 0) && memory[1].baked.is_none());
    assert_eq!(ctx.uncaptured_error_count(), 0);
}
