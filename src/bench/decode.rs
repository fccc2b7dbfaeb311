//! `neurotex bench decode`: the NTC decode kernels alone on synthetic full-screen frames —
//! the NTC paper's Tables 5 (time against resolution, one decoder) and 6 (decoders per
//! wave, shared against non-shared) on our kernels, and the sorted decode beside them —
//! with the adapter's peaks measured in the same run, so every decode is also reported as
//! TFLOP/s and as a fraction of the peak that bounds it.
//!
//! No geometry: a generated G-buffer (material id, UV, UV derivatives, a tangent frame) of
//! each size, every pixel covered. Every 8×8 tile (two 32-wide waves, one 64-wide) holds
//! `k` distinct materials, uniformly mixed; the package has one decoder per material
//! ("separate") or one decoder shared by all materials over the same latents ("shared").
//! The decoders are random-weight decoders of the default layout (`--quick`: a smaller
//! one, [`DecodeBenchOptions::quick`]; He-uniform weights,
//! small hidden biases, output biases near ½; no training: timing does not depend on the
//! values), the latents random codes. Materials are `side`² with a UV footprint of 1.25
//! texels per pixel (stochastic mips 0–1).
//!
//! Each kernel × tile builds its pipelines once, on a thread with a time budget (a driver
//! compile that takes longer is skipped and reported, the run goes on); each case renders
//! untimed frames until its frame times settle (at least `warmup` frames and
//! `warmup_time`, `bench::trust`) and `frames` timed frames, each submitted and timed on
//! its own with timestamp queries (every stage of the sorted kernels separately), timed
//! again once when p90/p10 exceeds 1.25 and flagged unstable in every output if it still
//! does. With stages on, every kernel is also built with one stage of the decode alone
//! (input, MLP, output: [`DecodeStage`]) and timed on the Table 5 cases: each stage's ms,
//! rate against the measured peak, and the stage that bounds the kernel. Sizes whose frame
//! would exceed the memory budget or the device's texture limit are skipped with a note;
//! the whole run stops starting cases after its time budget. With checks on, each
//! measured frame is decoded once more into targets poisoned with NaN and compared with
//! the CPU decoder (`render::ntc_gpu::NtcCpuReference`) on the same package.

use crate::gpu::Defines;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use half::f16;
use serde::Serialize;
use wgpu::util::DeviceExt as _;

use crate::bench::trust::{self, Trusted};
use crate::bench::{BenchError, Spread};
use crate::charts::{Panel, Series, SeriesLabelPosition, write_panels_png};
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc};
use crate::gpu::layout::Slot;
use crate::gpu::{GpuContext, GpuProfiler, read_buffer, read_texture};
use crate::ntc::format::{NtcMaterial, NtcPackage};
use crate::ntc::model::{
    DecoderWeights, LatentLayout, NtcConfig, Preset, SplitMix64, full_mip_count,
};
use crate::ntc::quant;
use crate::ntc::train::Quality;
use crate::render::blue_noise::{self, BlueNoise};
use crate::render::gpu_types::{FrameUniform, MaterialData};
use crate::render::ntc_gpu::{NtcCpuReference, NtcSceneGpu, PixelInput};
use crate::render::passes::ntc_decode::{
    DecodeInputs, DecodeSettings, DecodeStage, NtcDecodePass, NtcKernel,
};
use crate::render::targets::{GBuffer, MaterialTargets, Target, format};
use crate::scene::Material;
use crate::screen::tiles::TileSize;
use crate::texture::{CHANNELS, ChannelMask};

/// The frame index every decode uses (its blue noise).
const FRAME: u32 = 3;
/// Side of the tiles that hold `k` materials each.
const MIX_TILE: u32 = 8;
/// Bytes per pixel of one case: the G-buffer's four read targets (28), the material
/// targets (24), the sort's slot (4) and the host arrays the G-buffer is written from
/// (28), rounded up.
const BYTES_PER_PIXEL: u64 = 96;
/// Tolerance of the f32 kernel against the CPU decoder, beyond f16 storage
/// (`tests/integration/ntc_render.rs` explains both).
const F32_TOLERANCE: f32 = 1e-4;
/// Tolerance of the f16 kernels.
const F16_TOLERANCE: f32 = 2e-2;

/// What to measure.
#[derive(Clone, Debug)]
pub struct DecodeBenchOptions {
    /// Square frame sides, in pixels.
    pub sizes: Vec<u32>,
    /// Distinct materials per 8×8 tile.
    pub mixes: Vec<u32>,
    /// Kernels (ones the device cannot run are skipped with the reason).
    pub kernels: Vec<NtcKernel>,
    /// Tiles of the per-tile kernels (the sorted kernels run once, with the first).
    pub tiles: Vec<TileSize>,
    /// Untimed frames before each measurement.
    pub warmup: u32,
    /// Untimed frames go on until this much time has passed too: a GPU that idled while
    /// the host built the case's frame (or checked the previous one) lowers its clocks,
    /// and a few frames of a small case do not bring them back (on an H200 the first
    /// case of a size ran 2–5× slower after 3 warm-up frames).
    pub warmup_time: Duration,
    /// Timed frames per measurement.
    pub frames: u32,
    /// Also time every kernel with one stage of the decode alone (input, MLP, output) on
    /// the Table 5 cases.
    pub stages: bool,
    /// The decoders' layout (random weights).
    pub config: NtcConfig,
    /// Materials (and decoders of the separate package).
    pub materials: u32,
    /// Side of every material in texels.
    pub material_side: u32,
    /// Compare every measured frame with the CPU decoder up to this many pixels per frame
    /// (all pixels of smaller frames; sampled in larger ones); 0: no checks.
    pub check_pixels: usize,
    /// Frames larger than this (pixels) are not checked (their readback costs more than the
    /// timing).
    pub check_max_pixels: u64,
    /// Time allowed to build one kernel's pipelines.
    pub build_budget: Duration,
    /// No case starts after this much time.
    pub time_budget: Duration,
    /// Bytes one case may allocate (host and GPU).
    pub memory_budget: u64,
    /// Iterations of the FMA and matrix peak kernels.
    pub peak_iters: u32,
    /// Workgroups of the peak kernels.
    pub peak_groups: u32,
    /// Bytes copied by the bandwidth peak.
    pub peak_copy_bytes: u64,
}

impl DecodeBenchOptions {
    /// The full run: 512² … 8192², 1/2/5/10/16 materials per tile, 16 materials of 1024².
    pub fn full(kernels: Vec<NtcKernel>) -> Self {
        Self {
            sizes: vec![512, 1024, 2048, 4096, 8192],
            mixes: vec![1, 2, 5, 10, 16],
            kernels,
            tiles: vec![TileSize::T8x8, TileSize::T16x16],
            warmup: 5,
            warmup_time: Duration::from_millis(300),
            frames: 20,
            stages: true,
            config: NtcConfig::default(),
            materials: 16,
            material_side: 1024,
            check_pixels: 2000,
            check_max_pixels: 1024 * 1024,
            build_budget: Duration::from_secs(60),
            time_budget: Duration::from_secs(3600),
            memory_budget: crate::texture::budget::limit(),
            peak_iters: 1024,
            peak_groups: 4224,
            peak_copy_bytes: 1 << 30,
        }
    }

    /// `--quick`: tiny frames (24², 40²), 1 and 5 materials per tile, 6 materials of 64²,
    /// 8×8 tiles, few frames, every pixel of every frame checked against the CPU decoder —
    /// with a smaller decoder (8 features, 32→32→32→16, the layout of
    /// `tests/integration/ntc_render.rs`): software rasterisers (lavapipe) take minutes to compile the
    /// default layout's unrolled kernels.
    pub fn quick(kernels: Vec<NtcKernel>) -> Self {
        Self {
            config: NtcConfig {
                features: 8,
                hidden: vec![32, 32],
                ..NtcConfig::default()
            },
            sizes: vec![24, 40],
            mixes: vec![1, 5],
            tiles: vec![TileSize::T8x8],
            warmup: 1,
            warmup_time: Duration::ZERO,
            frames: 2,
            materials: 6,
            material_side: 64,
            check_pixels: usize::MAX,
            check_max_pixels: u64::MAX,
            peak_iters: 16,
            peak_groups: 8,
            peak_copy_bytes: 1 << 20,
            ..Self::full(kernels)
        }
    }
}

/// One measured peak of the adapter.
#[derive(Clone, Debug, Serialize)]
pub struct Peak {
    /// `f32 FMA`, `f16x2 FMA`, `coop f16 acc`, `coop f32 acc` or `copy`.
    pub name: String,
    /// TFLOP/s, or TB/s for the copy.
    pub value: f64,
    /// `TFLOP/s` or `TB/s`.
    pub unit: String,
    /// Median time of one dispatch.
    pub ms: f64,
    /// Whether its output equals the CPU reference (`None`: the matrix peaks, which have
    /// none).
    pub equal: Option<bool>,
}

/// A decoded frame against the CPU decoder.
#[derive(Clone, Debug, Serialize)]
pub struct EqualityCheck {
    /// Pixels compared.
    pub compared: usize,
    /// Pixels skipped: within 2e-3 of a mip or texel decision boundary.
    pub skipped: usize,
    /// Largest |GPU − CPU| − |CPU|/1024 over the compared values (f16 storage allowed).
    pub max_error: f32,
    /// The tolerance of this kernel.
    pub tolerance: f32,
    /// Compared pixels with a value over the tolerance (or not written: NaN).
    pub over_tolerance: usize,
    /// No pixel over the tolerance, and enough compared.
    pub equal: bool,
}

/// One kernel × tile on one case.
#[derive(Clone, Debug, Serialize)]
pub struct DecodeRow {
    /// Frame width = height.
    pub size: u32,
    /// Distinct materials per 8×8 tile.
    pub mix: u32,
    /// One decoder for every material.
    pub shared: bool,
    /// Decoders in the package.
    pub decoders: usize,
    /// The kernel.
    pub kernel: NtcKernel,
    /// The tile (`None` for the sorted kernels, which sort 8×8 tiles).
    pub tile: Option<TileSize>,
    /// Every stage together, per frame.
    pub ms: Spread,
    /// Whether the first measurement's p90/p10 exceeded 1.25 and it was measured again
    /// (`bench::trust`).
    pub remeasured: bool,
    /// Whether `ms` is still unstable after that (p90/p10 > 1.25): not to be trusted.
    pub unstable: bool,
    /// Median per stage (`ntc.sort.count`, …, `ntc.decode`).
    pub stages: Vec<(String, f64)>,
    /// Decoder arithmetic over the median time.
    pub tflops: f64,
    /// The peak that bounds the kernel's arithmetic (`f32 FMA`, `f16x2 FMA`, `coop …`).
    pub bound_by: String,
    /// `tflops` over that peak (`None` when it was not measured).
    pub fraction_of_peak: Option<f64>,
    /// The frame's G-buffer reads and target writes (a lower bound of its traffic) over
    /// the median time, as a fraction of the copy peak.
    pub fraction_of_bandwidth: Option<f64>,
    /// Timed frames.
    pub frames: u32,
    /// Against the CPU decoder, when checked.
    pub check: Option<EqualityCheck>,
}

/// One stage of a kernel's decode timed alone (the others cut by defines,
/// [`DecodeStage`]).
#[derive(Clone, Debug, Serialize)]
pub struct StageCost {
    /// Input, MLP or output.
    pub stage: DecodeStage,
    /// The decode pass (`ntc.decode`) with only this stage, per frame.
    pub ms: Spread,
    /// Whether `ms` stayed unstable after a second measurement.
    pub unstable: bool,
    /// The stage's work over its median time: TFLOP/s (MLP) or TB/s (input, output:
    /// the bytes it requests, a lower bound of its traffic).
    pub rate: f64,
    /// `TFLOP/s` or `TB/s`.
    pub unit: String,
    /// The measured peak it is set against (the kernel's arithmetic peak, or `copy`).
    pub against: String,
    /// `rate` over that peak (`None` when it was not measured).
    pub fraction_of_peak: Option<f64>,
}

/// A kernel's decode cut into its stages on one case (Table 5's: one material per tile,
/// separate).
#[derive(Clone, Debug, Serialize)]
pub struct StageRow {
    /// Frame width = height.
    pub size: u32,
    /// The kernel.
    pub kernel: NtcKernel,
    /// The tile (`None` for the sorted kernels).
    pub tile: Option<TileSize>,
    /// The whole decode pass (`ntc.decode`, without the sort), per frame.
    pub all: Spread,
    /// Whether `all` stayed unstable.
    pub all_unstable: bool,
    /// Each stage alone.
    pub stages: Vec<StageCost>,
    /// The stage that takes longest alone: the one bounding the kernel.
    pub bound_by: DecodeStage,
}

impl StageRow {
    /// `kernel` or `kernel tile`.
    pub fn variant(&self) -> String {
        self.tile
            .map_or(self.kernel.to_string(), |t| format!("{} {t}", self.kernel))
    }
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct DecodeBenchReport {
    /// `GpuContext::describe()`.
    pub adapter: String,
    /// Granted features.
    pub features: String,
    /// Subgroup sizes the adapter reports (min, max).
    pub subgroup_sizes: (u32, u32),
    /// The command line.
    pub command: String,
    /// The decoder layout: input → hidden… → outputs.
    pub layout: String,
    /// FLOP per decoded pixel.
    pub flops_per_pixel: f64,
    /// Materials, each `material_side`².
    pub materials: u32,
    /// Side of each material.
    pub material_side: u32,
    /// Sizes measured.
    pub sizes: Vec<u32>,
    /// Materials per tile measured.
    pub mixes: Vec<u32>,
    /// The peaks, first.
    pub peaks: Vec<Peak>,
    /// The measurements.
    pub rows: Vec<DecodeRow>,
    /// The stage costs.
    pub stage_rows: Vec<StageRow>,
    /// What was skipped, and why.
    pub skipped: Vec<String>,
    /// Seconds the run took.
    pub seconds: f64,
}

/// The synthetic package pair and what every case shares.
struct Content {
    config: NtcConfig,
    /// [separate, shared].
    packages: [NtcPackage; 2],
    gpu: [NtcSceneGpu; 2],
    map: Vec<Option<u32>>,
    materials: Vec<MaterialData>,
    material_buffer: wgpu::Buffer,
    noise: BlueNoise,
    frame: wgpu::Buffer,
}

/// Random-weight decoders of the default layout for `count` materials of `side`², random
/// latent codes; material `m` uses decoder `m` (separate) or decoder 0 (shared).
fn synthetic_packages(
    config: &NtcConfig,
    count: u32,
    side: u32,
) -> Result<[NtcPackage; 2], BenchError> {
    let synthetic = |e: &dyn std::fmt::Display| BenchError::Synthetic(e.to_string());
    let mut rng = SplitMix64::new(0xDEC0DE);
    let shapes = config.layer_shapes();
    let mut decoders = Vec::new();
    for _ in 0..count {
        let mut w = DecoderWeights::init(config, &mut rng).map_err(|e| synthetic(&e))?;
        let params = w.params_mut();
        let mut offset = 0;
        for (l, shape) in shapes.iter().enumerate() {
            offset += shape.inputs * shape.outputs;
            for b in &mut params[offset..offset + shape.outputs] {
                *b = if l + 1 == shapes.len() {
                    0.5 + rng.uniform(-0.1, 0.1) as f32
                } else {
                    rng.uniform(-0.2, 0.2) as f32
                };
            }
            offset += shape.outputs;
        }
        decoders.push(quant::decoder_to_f16(w.params()).map_err(|e| synthetic(&e))?);
    }
    let layout = LatentLayout::new(
        side,
        side,
        full_mip_count(side, side),
        Preset::High,
        config.features,
    )
    .map_err(|e| synthetic(&e))?;
    let words = layout.packed_words(config.latent_bits);
    let latents: Vec<Vec<u32>> = (0..count)
        .map(|_| (0..words).map(|_| rng.next_u64() as u32).collect())
        .collect();
    let make = |shared: bool| -> Result<NtcPackage, BenchError> {
        let mut p = NtcPackage::new(config.clone()).map_err(|e| synthetic(&e))?;
        p.decoders = if shared {
            decoders[..1].to_vec()
        } else {
            decoders.clone()
        };
        for (m, l) in latents.iter().enumerate() {
            p.materials.push(NtcMaterial {
                name: format!("m{m}"),
                present: ChannelMask::ALL,
                layout: layout.clone(),
                decoder: if shared { 0 } else { m as u32 },
                constants: [1.0; CHANNELS],
                quality: Quality::default(),
                latents: l.clone(),
            });
        }
        p.validate().map_err(|e| synthetic(&e))?;
        Ok(p)
    };
    Ok([make(false)?, make(true)?])
}

impl Content {
    fn new(ctx: &GpuContext, opts: &DecodeBenchOptions) -> Result<Self, BenchError> {
        let packages = synthetic_packages(&opts.config, opts.materials, opts.material_side)?;
        let map: Vec<Option<u32>> = (0..opts.materials).map(Some).collect();
        let materials: Vec<MaterialData> = (0..opts.materials)
            .map(|m| {
                let t = m as f32 / opts.materials as f32;
                MaterialData::from_material(&Material {
                    base_color_factor: [1.0, 0.8 + 0.2 * t, 0.9, 1.0],
                    roughness_factor: 0.5 + 0.5 * t,
                    metallic_factor: 1.0 - 0.5 * t,
                    emissive_factor: [0.5, 0.25, t],
                    normal_scale: 0.5,
                    occlusion_strength: 0.8,
                    ..Default::default()
                })
            })
            .collect();
        let device = &ctx.device;
        let material_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("bench.materials"),
            contents: bytemuck::cast_slice(&materials),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let gpu = [
            NtcSceneGpu::upload(ctx, &packages[0], &map)?,
            NtcSceneGpu::upload(ctx, &packages[1], &map)?,
        ];
        let mut uniform: FrameUniform = bytemuck::Zeroable::zeroed();
        uniform.frame_index = FRAME;
        let frame = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("bench.frame"),
            contents: bytemuck::bytes_of(&uniform),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        Ok(Self {
            config: packages[0].config.clone(),
            packages,
            gpu,
            map,
            materials,
            material_buffer,
            noise: BlueNoise::new(device, &ctx.queue),
            frame,
        })
    }
}

/// The generated G-buffer of pixel `(x, y)` of a frame with `mix` materials per 8×8 tile
/// out of `materials`, each `side`² (material word, uv, uv derivatives, normal and
/// tangent, all as stored: derivatives and frame rounded to f16).
pub fn synthetic_pixel(x: u32, y: u32, mix: u32, materials: u32, side: u32) -> PixelInput {
    let (tx, ty) = (x / MIX_TILE, y / MIX_TILE);
    let hash = SplitMix64::new((u64::from(tx) << 32 | u64::from(ty)) ^ 0x7A11).next_u64();
    let base = (hash % u64::from(materials)) as u32;
    let perm = ((hash >> 32) % 64) as u32;
    let li = (y % MIX_TILE) * MIX_TILE + x % MIX_TILE;
    // li · 37 + perm is a permutation of 0..64, so a tile holds min(mix, 64) materials.
    let m = (base + ((li * 37 + perm) % 64) % mix.max(1)) % materials.max(1);
    let sign = if (x ^ y) & 1 == 1 { 0x8000_0000 } else { 0 };
    let scale = 1.25 / side as f32;
    let round = |v: f32| f16::from_f32(v).to_f32();
    let wobble = 1.0 + 0.3 * ((x as f32 * 0.01).sin() * (y as f32 * 0.013).cos());
    let a = 0.2 * (x as f32 * 0.003).sin();
    let b = 0.2 * (y as f32 * 0.002).cos();
    let pixel = (x, y);
    PixelInput {
        word: m | sign,
        uv: [(x as f32 + 0.5) * scale, (y as f32 + 0.5) * scale],
        uv_grad: [scale * wobble, 0.0, 0.0, scale * wobble].map(round),
        // Normal near +z (octahedral (a, b)), tangent near +x.
        normal_tangent: [a, b, 0.9 - 0.1 * b, 0.1 + 0.05 * a].map(round),
        xi: [0, 1, 2].map(|c| blue_noise::sample(pixel, FRAME, c)),
    }
}

/// One case's G-buffer and targets on the GPU.
struct Frame {
    size: u32,
    mix: u32,
    gbuffer: GBuffer,
    targets: MaterialTargets,
}

impl Frame {
    fn new(ctx: &GpuContext, opts: &DecodeBenchOptions, size: u32, mix: u32) -> Self {
        let device = &ctx.device;
        let n = (size * size) as usize;
        let (mut words, mut uv, mut grad, mut nt) = (
            Vec::with_capacity(n * 4),
            Vec::with_capacity(n * 8),
            Vec::with_capacity(n * 8),
            Vec::with_capacity(n * 8),
        );
        let halves = |out: &mut Vec<u8>, v: [f32; 4]| {
            for c in v {
                out.extend_from_slice(&f16::from_f32(c).to_le_bytes());
            }
        };
        for y in 0..size {
            for x in 0..size {
                let p = synthetic_pixel(x, y, mix, opts.materials, opts.material_side);
                words.extend_from_slice(&p.word.to_le_bytes());
                uv.extend_from_slice(bytemuck::bytes_of(&p.uv));
                halves(&mut grad, p.uv_grad);
                halves(&mut nt, p.normal_tangent);
            }
        }
        let dims = (size, size);
        let written = |label: &str, fmt, bytes: &[u8], texel: u32| {
            let t = Target::new(device, label, dims, fmt, wgpu::TextureUsages::COPY_DST);
            ctx.queue.write_texture(
                t.texture.as_image_copy(),
                bytes,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(size * texel),
                    rows_per_image: Some(size),
                },
                t.texture.size(),
            );
            t
        };
        let none = wgpu::TextureUsages::empty();
        let gbuffer = GBuffer {
            normal_tangent: written("bench.normal_tangent", format::NORMAL_TANGENT, &nt, 8),
            uv: written("bench.uv", format::UV, &uv, 8),
            uv_grad: written("bench.uv_grad", format::UV_GRAD, &grad, 8),
            material: written("bench.material", format::MATERIAL, &words, 4),
            // The decode reads neither.
            motion: Target::new(device, "bench.motion", (1, 1), format::MOTION, none),
            depth: Target::new(device, "bench.depth", (1, 1), format::DEPTH, none),
            ids: None,
        };
        let usage = wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::COPY_DST;
        let target = |label: &str| Target::new(device, label, dims, format::MATERIAL_TARGET, usage);
        let targets = MaterialTargets {
            base_color: target("bench.base_color"),
            normal_rm: target("bench.normal_rm"),
            emissive_ao: target("bench.emissive_ao"),
        };
        Self {
            size,
            mix,
            gbuffer,
            targets,
        }
    }

    /// The three targets, every texel set to f16 NaN (an unwritten pixel then fails).
    fn poison(&self, ctx: &GpuContext) {
        let nan: Vec<u8> =
            std::iter::repeat_n([0x00u8, 0x7E], (self.size * self.size * 4) as usize)
                .flatten()
                .collect();
        for t in self.target_list() {
            ctx.queue.write_texture(
                t.texture.as_image_copy(),
                &nan,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(self.size * 8),
                    rows_per_image: Some(self.size),
                },
                t.texture.size(),
            );
        }
    }

    fn target_list(&self) -> [&Target; 3] {
        [
            &self.targets.base_color,
            &self.targets.normal_rm,
            &self.targets.emissive_ao,
        ]
    }
}

/// Build `kernel`'s pass (running `stage` of the decode) on another thread; give up waiting after `budget` (the thread
/// finishes on its own; its pipelines are dropped).
fn build_pass(
    ctx: &GpuContext,
    config: &NtcConfig,
    kernel: NtcKernel,
    tile: TileSize,
    stage: DecodeStage,
    budget: Duration,
) -> Result<(NtcDecodePass, Duration), String> {
    let (send, receive) = mpsc::channel();
    let (ctx, config) = (ctx.clone(), config.clone());
    let start = Instant::now();
    std::thread::spawn(move || {
        let _ = send.send(NtcDecodePass::with_stage(
            &ctx, &config, kernel, tile, stage,
        ));
    });
    match receive.recv_timeout(budget) {
        Ok(Ok(pass)) => Ok((pass, start.elapsed())),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "building its pipelines took longer than the {:.0} s budget",
            budget.as_secs_f64()
        )),
    }
}

/// Records frames of one pass on one case and reads their timings.
struct Timer<'a> {
    ctx: &'a GpuContext,
    profiler: GpuProfiler,
}

impl<'a> Timer<'a> {
    /// One frame of `pass` over `frame` with `package`; per stage label, milliseconds.
    fn frame(
        &mut self,
        pass: &mut NtcDecodePass,
        content: &Content,
        package: &NtcSceneGpu,
        frame: &Frame,
    ) -> Result<Vec<(String, f64)>, BenchError> {
        let ctx = self.ctx;
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bench.decode"),
            });
        let settings = DecodeSettings::default();
        let inputs = DecodeInputs {
            frame: &content.frame,
            materials: &content.material_buffer,
            gbuffer: &frame.gbuffer,
            blue_noise: &content.noise.view,
            package,
            settings: &settings,
        };
        ctx.error_scope(|| {
            pass.record(
                &mut FrameEncoder::new(ctx, &mut encoder, &self.profiler),
                &inputs,
                &frame.targets,
            )
        })??;
        ctx.queue.submit([encoder.finish()]);
        self.profiler.end_frame(ctx);
        Ok(self
            .profiler
            .collect(ctx)
            .into_iter()
            .filter(|t| NtcDecodePass::is_stage_label(&t.label))
            .map(|t| (t.label, t.ms))
            .collect())
    }
}

/// One configuration measured under the trust rules (`bench::trust`).
struct Measured {
    /// Every stage together, per frame.
    totals: Spread,
    /// The decode pass alone (`ntc.decode`), per frame.
    decode: Spread,
    /// Median per stage label.
    stages: Vec<(String, f64)>,
    remeasured: bool,
    unstable: bool,
}

impl Timer<'_> {
    /// Warm `pass` up on `frame` until its frame times settle (at least `opts.warmup`
    /// frames and `opts.warmup_time`), then time `opts.frames` frames, once more when
    /// they are unstable.
    fn measure(
        &mut self,
        opts: &DecodeBenchOptions,
        pass: &mut NtcDecodePass,
        content: &Content,
        package: &NtcSceneGpu,
        frame: &Frame,
    ) -> Result<Measured, BenchError> {
        let total = |stages: &Vec<(String, f64)>| stages.iter().map(|s| s.1).sum::<f64>();
        let warm = Instant::now();
        let mut times = Vec::new();
        while !trust::warm_enough(&times, warm.elapsed(), opts.warmup, opts.warmup_time) {
            times.push(total(&self.frame(pass, content, package, frame)?));
        }
        let Trusted {
            samples,
            remeasured,
            unstable,
        } = trust::measure_trusted(
            || {
                (0..opts.frames)
                    .map(|_| self.frame(pass, content, package, frame))
                    .collect::<Result<Vec<_>, _>>()
            },
            total,
        )?;
        let mut per_stage: Vec<(String, Vec<f64>)> = Vec::new();
        for stages in &samples {
            for (label, ms) in stages {
                match per_stage.iter_mut().find(|s| &s.0 == label) {
                    Some(s) => s.1.push(*ms),
                    None => per_stage.push((label.clone(), vec![*ms])),
                }
            }
        }
        let decode = per_stage
            .iter()
            .find(|s| s.0 == NtcDecodePass::LABEL)
            .map_or_else(Spread::default, |s| Spread::of(&s.1));
        Ok(Measured {
            totals: Spread::of(&samples.iter().map(total).collect::<Vec<_>>()),
            decode,
            stages: per_stage
                .into_iter()
                .map(|(label, v)| (label, Spread::of(&v).median))
                .collect(),
            remeasured,
            unstable,
        })
    }
}

/// Bytes one pixel's input stage requests: its G-buffer UV, derivatives and material word
/// (20), its run slot (sorted kernels, 4) and the latents of four taps in each of two
/// grids.
fn input_bytes(config: &NtcConfig, sorted: bool) -> f64 {
    let words_per_texel = (config.features * config.latent_bits.bits()).div_ceil(32);
    20.0 + if sorted { 4.0 } else { 0.0 } + f64::from(2 * 4 * 4 * words_per_texel)
}

/// Bytes one pixel's output stage requests: its G-buffer normal and tangent (8) and
/// material word (4), and the three targets it writes (24).
const OUTPUT_BYTES: f64 = 36.0;

/// Compare the targets of `frame` (just decoded from `package`) with the CPU decoder on up
/// to `samples` pixels (all when the frame has no more).
fn check_frame(
    ctx: &GpuContext,
    opts: &DecodeBenchOptions,
    frame: &Frame,
    package: &NtcPackage,
    reference: &NtcCpuReference<'_>,
    tolerance: f32,
) -> Result<EqualityCheck, BenchError> {
    let out: Vec<Vec<f32>> = frame
        .target_list()
        .iter()
        .map(|t| read_texture(ctx, &t.texture, 0, 0).and_then(|d| d.to_f32()))
        .collect::<Result<_, _>>()?;
    let n = (frame.size * frame.size) as usize;
    let all = n <= opts.check_pixels;
    let count = if all { n } else { opts.check_pixels };
    let mut rng = SplitMix64::new(99);
    let settings = DecodeSettings::default();
    let (mut compared, mut skipped, mut over, mut worst) = (0, 0, 0, 0.0f32);
    for s in 0..count {
        let i = if all { s } else { rng.below(n as u64) as usize };
        let (x, y) = (i as u32 % frame.size, i as u32 / frame.size);
        let input = synthetic_pixel(x, y, frame.mix, opts.materials, opts.material_side);
        let m = (input.word & 0xF_FFFF) as usize;
        let layout = &package.materials[m].layout;
        let choice = crate::render::ntc_gpu::choose_texel(
            layout,
            input.uv,
            input.uv_grad,
            &settings,
            input.xi,
        );
        if choice.margin < 2e-3 {
            skipped += 1;
            continue;
        }
        let expected = reference.pixel(&input, &settings)?;
        compared += 1;
        let mut bad = false;
        for (t, values) in expected.iter().enumerate() {
            for (k, &e) in values.iter().enumerate() {
                let got = out[t][4 * i + k];
                let err = if got.is_finite() {
                    (got - e).abs() - e.abs() / 1024.0
                } else {
                    f32::INFINITY
                };
                worst = worst.max(err);
                bad |= err > tolerance;
            }
        }
        over += usize::from(bad);
    }
    Ok(EqualityCheck {
        compared,
        skipped,
        max_error: worst,
        tolerance,
        over_tolerance: over,
        equal: over == 0 && compared * 20 >= count * 19,
    })
}

/// A short calibration of `kernels` for decoders of shape `config` (what
/// `render::kernel_choice` caches): each on one synthetic 512² frame with 2 materials per
/// 8×8 tile out of 4 of 256² (per-tile kernels with 8×8 tiles), warmed up and timed as a
/// bench case (5 frames). Per kernel its median ms, `None` where it failed to build or
/// run.
pub fn calibrate(
    ctx: &GpuContext,
    config: &NtcConfig,
    kernels: &[NtcKernel],
) -> Vec<(NtcKernel, Option<f64>)> {
    let opts = DecodeBenchOptions {
        config: config.clone(),
        materials: 4,
        material_side: 256,
        sizes: vec![512],
        mixes: vec![2],
        frames: 5,
        warmup: 3,
        stages: false,
        check_pixels: 0,
        ..DecodeBenchOptions::full(kernels.to_vec())
    };
    let content = match Content::new(ctx, &opts) {
        Ok(c) => c,
        Err(e) => {
            log::warn!("decode kernel calibration: {e}");
            return Vec::new();
        }
    };
    let frame = Frame::new(ctx, &opts, opts.sizes[0], opts.mixes[0]);
    let mut timer = Timer {
        ctx,
        profiler: GpuProfiler::new(ctx),
    };
    kernels
        .iter()
        .map(|&kernel| {
            let ms = build_pass(
                ctx,
                config,
                kernel,
                TileSize::T8x8,
                DecodeStage::All,
                opts.build_budget,
            )
            .map_err(|e| log::warn!("decode kernel calibration, {kernel}: {e}"))
            .ok()
            .and_then(|(mut pass, _)| {
                timer
                    .measure(&opts, &mut pass, &content, &content.gpu[0], &frame)
                    .map_err(|e| log::warn!("decode kernel calibration, {kernel}: {e}"))
                    .ok()
            })
            .map(|m| m.totals.median);
            if let Some(ms) = ms {
                log::info!("decode kernel calibration: {kernel} {ms:.3} ms");
            }
            (kernel, ms)
        })
        .collect()
}

/// The CPU reference of the FMA peak kernels (`shaders/bench_peaks.wgsl`): invocation
/// `index`'s output for `seed_word` = `src[index % 16].x` (a `vec4<u32>` array), `iters`
/// steps, f32 or f16.
pub fn peak_reference(seed_word: u32, iters: u32, half_precision: bool) -> f32 {
    if half_precision {
        let h = |v: f32| f16::from_f32(v);
        let seed = h((seed_word & 255) as f32 * 0.003_906_25);
        let m = h(h(0.999).to_f32() + h(seed.to_f32() * h(0.0001).to_f32()).to_f32());
        let a = h(seed.to_f32() * h(0.001).to_f32());
        let mut s = h(0.0);
        for k in 0..16 {
            let mut acc = h(seed.to_f32() + k as f32);
            for _ in 0..iters {
                acc = h(acc.to_f32().mul_add(m.to_f32(), a.to_f32()));
            }
            s = h(s.to_f32() + acc.to_f32());
        }
        s.to_f32()
    } else {
        let seed = (seed_word & 255) as f32 * (1.0 / 256.0);
        let m = 0.999 + seed * 1e-6;
        let a = 1e-3 * seed;
        let mut s = 0.0f32;
        for k in 0..16 {
            let mut acc = seed + k as f32;
            for _ in 0..iters {
                acc = acc.mul_add(m, a);
            }
            s += acc;
        }
        s
    }
}

/// A peak kernel: name, defines, work (FLOP or bytes), unit, dispatch grid.
type PeakSpec<'a> = (&'a str, &'a [&'a str], f64, &'a str, (u32, u32));

/// Measure the adapter's peaks (`shaders/bench_peaks.wgsl`) and check the FMA chains and
/// the copy against their CPU references.
fn measure_peaks(
    ctx: &GpuContext,
    opts: &DecodeBenchOptions,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<Peak>, BenchError> {
    let device = &ctx.device;
    let words = opts.peak_copy_bytes / 4;
    let src_words: Vec<u32> = (0..words)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761))
        .collect();
    let src = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("bench.peak.src"),
        contents: bytemuck::cast_slice(&src_words),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let invocations = u64::from(opts.peak_groups) * 256;
    let dst = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench.peak.dst"),
        size: opts.peak_copy_bytes.max(invocations * 16),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let it = f64::from(opts.peak_iters);
    let inv = invocations as f64;
    let copy_groups = (words / 4).div_ceil(256);
    let copy_grid = (
        copy_groups.min(65_535) as u32,
        copy_groups.div_ceil(65_535) as u32,
    );
    let mut list: Vec<PeakSpec<'_>> = vec![
        (
            "f32 FMA",
            &["PEAK_F32"],
            inv * it * 32.0,
            "TFLOP/s",
            (opts.peak_groups, 1),
        ),
        (
            "f16x2 FMA",
            &["PEAK_F16", "F16"],
            inv * it * 64.0,
            "TFLOP/s",
            (opts.peak_groups, 1),
        ),
        (
            "copy",
            &["PEAK_COPY"],
            2.0 * opts.peak_copy_bytes as f64,
            "TB/s",
            copy_grid,
        ),
    ];
    let has_f16 = ctx.granted.shader_f16;
    if !has_f16 {
        list.retain(|p| p.0 != "f16x2 FMA");
        note("peak f16x2 FMA: skipped (no shader_f16)");
    }
    if ctx.granted.cooperative_matrix && has_f16 {
        // Four 16×16×16 multiply-adds per subgroup of 32 (eight per workgroup) and step.
        let work = f64::from(opts.peak_groups) * 8.0 * it * 4.0 * 8192.0;
        list.push((
            "coop f16 acc",
            &["PEAK_COOP", "F16", "COOP"],
            work,
            "TFLOP/s",
            (opts.peak_groups, 1),
        ));
        list.push((
            "coop f32 acc",
            &["PEAK_COOP", "F16", "COOP", "PEAK_COOP_F32"],
            work,
            "TFLOP/s",
            (opts.peak_groups, 1),
        ));
    }
    let mut profiler = GpuProfiler::new(ctx);
    let mut peaks = Vec::new();
    for (name, flags, work, unit, grid) in list {
        let defines = flags
            .iter()
            .fold(Defines::new(), |d, flag| d.flag(flag))
            .with("PEAK_ITERS", opts.peak_iters);
        let label = format!("bench.peak.{}", name.replace(' ', "_"));
        let kernel = match ComputeKernel::new(
            ctx,
            &KernelDesc {
                label: &label,
                shader: "bench_peaks.wgsl",
                defines: &defines,
                entry: "main",
                groups: &[Group::Slots(&[Slot::Storage, Slot::StorageRw])],
            },
        ) {
            Ok(k) => k,
            Err(e) => {
                note(&format!("peak {name}: skipped ({e})"));
                continue;
            }
        };
        let group = kernel.bind_group(
            device,
            0,
            &[(0, src.as_entire_binding()), (1, dst.as_entire_binding())],
        );
        let mut times = Vec::new();
        for i in 0..(opts.warmup.min(3) + opts.frames) {
            let mut encoder = device.create_command_encoder(&Default::default());
            FrameEncoder::new(ctx, &mut encoder, &profiler).compute_pass(&label, |pass| {
                pass.set_pipeline(kernel.pipeline());
                pass.set_bind_group(0, &group, &[]);
                pass.dispatch_workgroups(grid.0, grid.1, 1);
            });
            ctx.queue.submit([encoder.finish()]);
            profiler.end_frame(ctx);
            let ms: f64 = profiler.collect(ctx).iter().map(|t| t.ms).sum();
            if i >= opts.warmup.min(3) {
                times.push(ms);
            }
        }
        let ms = Spread::of(&times).median;
        let value = work / (ms * 1e-3) / 1e12;
        let equal = peak_equal(ctx, name, &dst, &src_words, opts)?;
        note(&format!("peak {name}: {value:.2} {unit} ({ms:.3} ms)"));
        peaks.push(Peak {
            name: name.to_owned(),
            value,
            unit: unit.to_owned(),
            ms,
            equal,
        });
    }
    Ok(peaks)
}

/// Whether the last peak's output in `dst` equals its CPU reference (the first 1 MiB of
/// the copy; the first 64 invocations' sums, relative error ≤ 1e-5 in f32 and 1e-2 in f16).
fn peak_equal(
    ctx: &GpuContext,
    name: &str,
    dst: &wgpu::Buffer,
    src: &[u32],
    opts: &DecodeBenchOptions,
) -> Result<Option<bool>, BenchError> {
    match name {
        "copy" => {
            let bytes = (opts.peak_copy_bytes).min(1 << 20);
            let got: Vec<u32> = bytemuck::pod_collect_to_vec(&read_buffer(ctx, dst, 0..bytes)?);
            Ok(Some(got[..] == src[..got.len()]))
        }
        "f32 FMA" | "f16x2 FMA" => {
            let got: Vec<u32> = bytemuck::pod_collect_to_vec(&read_buffer(ctx, dst, 0..64 * 16)?);
            let half_precision = name == "f16x2 FMA";
            let tolerance = if half_precision { 1e-2 } else { 1e-5 };
            Ok(Some((0..64).all(|i| {
                // `src` is read as vec4<u32>: element i % 16's x.
                let want = peak_reference(src[4 * (i % 16)], opts.peak_iters, half_precision);
                let value = f32::from_bits(got[4 * i]);
                (value - want).abs() <= tolerance * want.abs().max(1.0)
            })))
        }
        _ => Ok(None),
    }
}

/// The peak bounding `kernel`'s arithmetic.
fn bound_of(kernel: NtcKernel) -> &'static str {
    match kernel {
        NtcKernel::F32 => "f32 FMA",
        NtcKernel::CoopMatrix => "coop f32 acc",
        NtcKernel::Mma | NtcKernel::SortedMma | NtcKernel::Chain | NtcKernel::SortedChain => {
            "coop f16 acc"
        }
        NtcKernel::F16 | NtcKernel::Fma | NtcKernel::SortedFma => "f16x2 FMA",
    }
}

/// The cases in measuring order: Table 5 (every size, one material per tile, separate),
/// then Table 6 (1024² or the nearest size: every mix, separate and shared), then the
/// rest of sizes × mixes × sharing.
fn plan(opts: &DecodeBenchOptions) -> Vec<(u32, u32, bool)> {
    let mut cases = Vec::new();
    let mut add = |c: (u32, u32, bool)| {
        if !cases.contains(&c) {
            cases.push(c);
        }
    };
    let first_mix = opts.mixes.first().copied().unwrap_or(1);
    for &s in &opts.sizes {
        add((s, first_mix, false));
    }
    if let Some(&table6) = opts.sizes.iter().min_by_key(|&&s| s.abs_diff(1024)) {
        for &k in &opts.mixes {
            add((table6, k, false));
            add((table6, k, true));
        }
    }
    for &s in &opts.sizes {
        for &k in &opts.mixes {
            add((s, k, false));
            add((s, k, true));
        }
    }
    cases
}

/// Run the whole benchmark: peaks, then every case of [`plan`] under every kernel × tile
/// that builds. `note` receives progress lines.
pub fn run_decode_bench(
    ctx: &GpuContext,
    opts: &DecodeBenchOptions,
    command: &str,
    note: &mut dyn FnMut(&str),
) -> Result<DecodeBenchReport, BenchError> {
    let start = Instant::now();
    if !ctx.granted.timestamps {
        return Err(BenchError::NoTimestamps(ctx.describe()));
    }
    let mut skipped = Vec::new();
    let peaks = measure_peaks(ctx, opts, note)?;
    note(&format!(
        "synthetic package: {} materials of {}², decoders {}",
        opts.materials, opts.material_side, opts.materials
    ));
    let content = Content::new(ctx, opts)?;
    let references = [
        NtcCpuReference::new(&content.packages[0], &content.map, &content.materials)?,
        NtcCpuReference::new(&content.packages[1], &content.map, &content.materials)?,
    ];
    // Every kernel × tile once, its pipelines built within the budget; with stages, also
    // a pass per single stage.
    let mut passes: Vec<(NtcKernel, Option<TileSize>, NtcDecodePass)> = Vec::new();
    let mut stage_passes: Vec<Vec<(DecodeStage, NtcDecodePass)>> = Vec::new();
    for &kernel in &opts.kernels {
        let tiles: Vec<Option<TileSize>> = if kernel.is_sorted() {
            vec![None]
        } else {
            opts.tiles.iter().copied().map(Some).collect()
        };
        for tile in tiles {
            let name = tile.map_or(kernel.to_string(), |t| format!("{kernel} {t}"));
            let build_tile = tile.unwrap_or(TileSize::T8x8);
            let build = |stage| {
                build_pass(
                    ctx,
                    &content.config,
                    kernel,
                    build_tile,
                    stage,
                    opts.build_budget,
                )
            };
            match build(DecodeStage::All) {
                Ok((pass, took)) => {
                    note(&format!("{name}: built in {:.1} s", took.as_secs_f64()));
                    passes.push((kernel, tile, pass));
                    let mut cut = Vec::new();
                    for stage in DecodeStage::SINGLE.into_iter().filter(|_| opts.stages) {
                        match build(stage) {
                            Ok((pass, _)) => cut.push((stage, pass)),
                            Err(e) => {
                                note(&format!("{name} {} stage: skipped ({e})", stage.name()));
                                skipped.push(format!("{name} {} stage: {e}", stage.name()));
                            }
                        }
                    }
                    stage_passes.push(cut);
                }
                Err(e) => {
                    note(&format!("{name}: skipped ({e})"));
                    skipped.push(format!("{name}: {e}"));
                }
            }
        }
    }
    let flops_per_pixel = NtcDecodePass::flops_per_pixel(&content.config);
    let peak = |name: &str| peaks.iter().find(|p| p.name == name).map(|p| p.value);
    let max_side = ctx.device.limits().max_texture_dimension_2d;
    let mut timer = Timer {
        ctx,
        profiler: GpuProfiler::new(ctx),
    };
    let mut rows = Vec::new();
    let mut stage_rows = Vec::new();
    let first_mix = opts.mixes.first().copied().unwrap_or(1);
    let mut skipped_sizes = Vec::new();
    for (size, mix, shared) in plan(opts) {
        let pixels = u64::from(size) * u64::from(size);
        let bytes = pixels * BYTES_PER_PIXEL;
        let over = if size > max_side {
            Some(format!(
                "the device's textures are at most {max_side} pixels wide"
            ))
        } else if bytes > opts.memory_budget {
            Some(format!(
                "a frame needs about {bytes} bytes, over the memory budget of {} (set {})",
                opts.memory_budget,
                crate::texture::budget::ENV
            ))
        } else {
            None
        };
        if let Some(why) = over {
            if !skipped_sizes.contains(&size) {
                note(&format!("{size}²: skipped ({why})"));
                skipped.push(format!("{size}²: {why}"));
                skipped_sizes.push(size);
            }
            continue;
        }
        if start.elapsed() > opts.time_budget {
            let why = format!(
                "{size}² k={mix} {}: not started, the run's {:.0} s budget was spent",
                if shared { "shared" } else { "separate" },
                opts.time_budget.as_secs_f64()
            );
            note(&why);
            skipped.push(why);
            continue;
        }
        let frame = Frame::new(ctx, opts, size, mix);
        let p = usize::from(shared);
        let package = &content.gpu[p];
        let check = opts.check_pixels > 0 && pixels <= opts.check_max_pixels;
        for ((kernel, tile, pass), cut) in passes.iter_mut().zip(&mut stage_passes) {
            let name = format!(
                "{size}² k={mix} {} {}",
                if shared { "shared" } else { "separate" },
                tile.map_or(kernel.to_string(), |t| format!("{kernel} {t}"))
            );
            let measured = timer.measure(opts, pass, &content, package, &frame)?;
            let ms = measured.totals;
            let tflops = pixels as f64 * flops_per_pixel / (ms.median * 1e-3) / 1e12;
            let bound_by = bound_of(*kernel);
            // G-buffer reads (28 bytes) and target writes (24) per pixel.
            let bandwidth = pixels as f64 * 52.0 / (ms.median * 1e-3) / 1e12;
            let equality = if check {
                frame.poison(ctx);
                timer.frame(pass, &content, package, &frame)?;
                let tolerance = if *kernel == NtcKernel::F32 {
                    F32_TOLERANCE
                } else {
                    F16_TOLERANCE
                };
                Some(check_frame(
                    ctx,
                    opts,
                    &frame,
                    &content.packages[p],
                    &references[p],
                    tolerance,
                )?)
            } else {
                None
            };
            let row = DecodeRow {
                size,
                mix,
                shared,
                decoders: content.packages[p].decoders.len(),
                kernel: *kernel,
                tile: *tile,
                ms,
                remeasured: measured.remeasured,
                unstable: measured.unstable,
                stages: measured.stages,
                tflops,
                bound_by: bound_by.to_owned(),
                fraction_of_peak: peak(bound_by).map(|p| tflops / p),
                fraction_of_bandwidth: peak("copy").map(|p| bandwidth / p),
                frames: opts.frames,
                check: equality,
            };
            note(&format!(
                "{name}: {} ms, {:.2} TFLOP/s{}{}",
                trust::spread_cell(&ms, row.unstable),
                tflops,
                if row.remeasured { " (re-measured)" } else { "" },
                row.check.as_ref().map_or(String::new(), |c| format!(
                    ", max error {:.1e} ({})",
                    c.max_error,
                    if c.equal { "equal" } else { "NOT EQUAL" }
                ))
            ));
            rows.push(row);
            if mix == first_mix && !shared && !cut.is_empty() {
                let mut stages = Vec::new();
                for (stage, stage_pass) in cut.iter_mut() {
                    let m = timer.measure(opts, stage_pass, &content, package, &frame)?;
                    let seconds = m.decode.median * 1e-3;
                    let (work, unit, against) = match stage {
                        DecodeStage::Mlp => (flops_per_pixel / 1e12, "TFLOP/s", bound_by),
                        DecodeStage::Input => (
                            input_bytes(&content.config, kernel.is_sorted()) / 1e12,
                            "TB/s",
                            "copy",
                        ),
                        _ => (OUTPUT_BYTES / 1e12, "TB/s", "copy"),
                    };
                    let rate = pixels as f64 * work / seconds;
                    note(&format!(
                        "{name} {} stage: {} ms, {rate:.3} {unit}",
                        stage.name(),
                        trust::spread_cell(&m.decode, m.unstable),
                    ));
                    stages.push(StageCost {
                        stage: *stage,
                        ms: m.decode,
                        unstable: m.unstable,
                        rate,
                        unit: unit.to_owned(),
                        against: against.to_owned(),
                        fraction_of_peak: peak(against).map(|p| rate / p),
                    });
                }
                let bound_by = stages
                    .iter()
                    .max_by(|a, b| a.ms.median.total_cmp(&b.ms.median))
                    .map_or(DecodeStage::All, |c| c.stage);
                stage_rows.push(StageRow {
                    size,
                    kernel: *kernel,
                    tile: *tile,
                    all: measured.decode,
                    all_unstable: measured.unstable,
                    stages,
                    bound_by,
                });
            }
        }
    }
    let layout = std::iter::once(content.config.input_width())
        .chain(content.config.hidden.iter().map(|&w| w as usize))
        .chain([crate::ntc::model::OUTPUTS])
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join("→");
    let info = ctx.adapter.get_info();
    Ok(DecodeBenchReport {
        adapter: ctx.describe(),
        features: ctx.granted.to_string(),
        subgroup_sizes: (info.subgroup_min_size, info.subgroup_max_size),
        command: command.to_owned(),
        layout,
        flops_per_pixel,
        materials: opts.materials,
        material_side: opts.material_side,
        sizes: opts.sizes.clone(),
        mixes: opts.mixes.clone(),
        peaks,
        rows,
        stage_rows,
        skipped,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The files [`write_decode_report`] writes into its folder.
pub const DECODE_REPORT_FILES: [&str; 4] = ["decode.json", "decode.csv", "decode.md", "decode.png"];

impl DecodeRow {
    /// `kernel` or `kernel tile`.
    pub fn variant(&self) -> String {
        self.tile
            .map_or(self.kernel.to_string(), |t| format!("{} {t}", self.kernel))
    }
}

impl DecodeBenchReport {
    /// The row of `variant` on a case, if measured.
    fn row(&self, variant: &str, size: u32, mix: u32, shared: bool) -> Option<&DecodeRow> {
        self.rows
            .iter()
            .find(|r| r.variant() == variant && (r.size, r.mix, r.shared) == (size, mix, shared))
    }

    /// The median of `variant` on a case, if measured.
    fn median(&self, variant: &str, size: u32, mix: u32, shared: bool) -> Option<f64> {
        self.row(variant, size, mix, shared).map(|r| r.ms.median)
    }

    /// Variants in measuring order.
    fn variants(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in &self.rows {
            if !v.contains(&r.variant()) {
                v.push(r.variant());
            }
        }
        v
    }

    /// The size of Table 6 (the one with every mix measured, nearest 1024²).
    fn table6_size(&self) -> Option<u32> {
        self.sizes
            .iter()
            .copied()
            .filter(|&s| self.rows.iter().any(|r| r.size == s && r.shared))
            .min_by_key(|s| s.abs_diff(1024))
    }

    /// Every row as CSV.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "size,mix,shared,decoders,kernel,tile,median_ms,p10_ms,p90_ms,remeasured,unstable,\
             stages,tflops,bound_by,fraction_of_peak,fraction_of_bandwidth,frames,max_error,equal\n",
        );
        for r in &self.rows {
            let stages: Vec<String> = r
                .stages
                .iter()
                .map(|(l, ms)| format!("{l}={ms:.4}"))
                .collect();
            out.push_str(&format!(
                "{},{},{},{},{},{},{:.4},{:.4},{:.4},{},{},{},{:.3},{},{},{},{},{},{}\n",
                r.size,
                r.mix,
                r.shared,
                r.decoders,
                r.kernel,
                r.tile.map_or(String::new(), |t| t.to_string()),
                r.ms.median,
                r.ms.p10,
                r.ms.p90,
                r.remeasured,
                r.unstable,
                stages.join(" "),
                r.tflops,
                r.bound_by,
                r.fraction_of_peak
                    .map_or(String::new(), |f| format!("{f:.4}")),
                r.fraction_of_bandwidth
                    .map_or(String::new(), |f| format!("{f:.4}")),
                r.frames,
                r.check
                    .as_ref()
                    .map_or(String::new(), |c| format!("{:.3e}", c.max_error)),
                r.check
                    .as_ref()
                    .map_or(String::new(), |c| c.equal.to_string()),
            ));
        }
        out
    }

    /// Adapter facts, peaks, Table 5, Table 6 and every row, as Markdown.
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "Adapter: {} (subgroups {}–{}); features: {}\n\nCommand: `{}`\n\nDecoder \
             {} ({:.0} FLOP per pixel), {} materials of {}²; {:.0} s.\n\n## Peaks\n\n\
             | peak | value | ms | equals CPU |\n|---|---|---|---|\n",
            self.adapter,
            self.subgroup_sizes.0,
            self.subgroup_sizes.1,
            self.features,
            self.command,
            self.layout,
            self.flops_per_pixel,
            self.materials,
            self.material_side,
            self.seconds
        );
        for p in &self.peaks {
            md.push_str(&format!(
                "| {} | {:.2} {} | {:.3} | {} |\n",
                p.name,
                p.value,
                p.unit,
                p.ms,
                p.equal.map_or("–".to_owned(), |e| e.to_string())
            ));
        }
        let variants = self.variants();
        let first_mix = self.mixes.first().copied().unwrap_or(1);
        let table = |md: &mut String,
                     title: String,
                     heads: Vec<String>,
                     cell: &dyn Fn(&str, usize) -> String| {
            md.push_str(&format!("\n## {title}\n\n| kernel |"));
            for h in &heads {
                md.push_str(&format!(" {h} |"));
            }
            md.push_str(&format!("\n|---|{}\n", "---|".repeat(heads.len())));
            for v in &variants {
                md.push_str(&format!("| {v} |"));
                for c in 0..heads.len() {
                    md.push_str(&cell(v, c));
                }
                md.push('\n');
            }
        };
        table(
            &mut md,
            format!("Table 5: ms against resolution ({first_mix} material per tile, separate)"),
            self.sizes.iter().map(|s| format!("{s}²")).collect(),
            &|v, c| match self.row(v, self.sizes[c], first_mix, false) {
                Some(r) => format!(" {} |", trust::spread_cell(&r.ms, r.unstable)),
                None => " – |".to_owned(),
            },
        );
        if let Some(s) = self.table6_size() {
            table(
                &mut md,
                format!(
                    "Table 6: ms at {s}² against materials per 8×8 tile, separate / shared (ratio)"
                ),
                self.mixes.iter().map(|k| format!("k={k}")).collect(),
                &|v, c| {
                    let k = self.mixes[c];
                    match (self.row(v, s, k, false), self.row(v, s, k, true)) {
                        (Some(a), Some(b)) => format!(
                            " {} / {} ({:.2}×) |",
                            trust::spread_cell(&a.ms, a.unstable),
                            trust::spread_cell(&b.ms, b.unstable),
                            a.ms.median / b.ms.median
                        ),
                        _ => " – |".to_owned(),
                    }
                },
            );
        }
        let pct = |f: Option<f64>| f.map_or("–".to_owned(), |f| format!("{:.1} %", 100.0 * f));
        if !self.stage_rows.is_empty() {
            md.push_str(
                "\n## Stage costs (ntc.decode with one stage alone; ms (p10–p90), rate, of \
                 peak)\n\n| size | kernel | whole decode | input | MLP | output | bound by |\n\
                 |---|---|---|---|---|---|---|\n",
            );
            for r in &self.stage_rows {
                md.push_str(&format!(
                    "| {}² | {} | {} |",
                    r.size,
                    r.variant(),
                    trust::spread_cell(&r.all, r.all_unstable)
                ));
                for stage in DecodeStage::SINGLE {
                    match r.stages.iter().find(|c| c.stage == stage) {
                        Some(c) => md.push_str(&format!(
                            " {}, {:.3} {} ({} of {}) |",
                            trust::spread_cell(&c.ms, c.unstable),
                            c.rate,
                            c.unit,
                            pct(c.fraction_of_peak),
                            c.against
                        )),
                        None => md.push_str(" – |"),
                    }
                }
                md.push_str(&format!(" {} |\n", r.bound_by.name()));
            }
        }
        md.push_str(
            "\n## Every measurement\n\n| size | k | decoders | variant | ms median | p10 | p90 | \
             unstable | stages | TFLOP/s | of peak | of bandwidth | max error | equal |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            let stages: Vec<String> = r
                .stages
                .iter()
                .map(|(l, ms)| format!("{} {ms:.3}", l.trim_start_matches("ntc.")))
                .collect();
            md.push_str(&format!(
                "| {}² | {}{} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {:.2} | {} ({}) | {} | {} | {} |\n",
                r.size,
                r.mix,
                if r.shared { " shared" } else { "" },
                r.decoders,
                r.variant(),
                r.ms.median,
                r.ms.p10,
                r.ms.p90,
                match (r.unstable, r.remeasured) {
                    (true, _) => "UNSTABLE",
                    (false, true) => "re-measured",
                    _ => "",
                },
                stages.join(", "),
                r.tflops,
                pct(r.fraction_of_peak),
                r.bound_by,
                pct(r.fraction_of_bandwidth),
                r.check.as_ref().map_or("–".to_owned(), |c| format!("{:.2e}", c.max_error)),
                r.check.as_ref().map_or("–".to_owned(), |c| c.equal.to_string()),
            ));
        }
        if !self.skipped.is_empty() {
            md.push_str("\nSkipped:\n\n");
            for s in &self.skipped {
                md.push_str(&format!("- {s}\n"));
            }
        }
        md
    }

    /// Two panels: ms against resolution (Table 5) and the speed-up of the shared decoder
    /// against materials per tile (Table 6).
    pub fn write_png(&self, path: &std::path::Path) -> Result<(), BenchError> {
        let variants = self.variants();
        let first_mix = self.mixes.first().copied().unwrap_or(1);
        let time = Panel {
            title: format!("decode time, {first_mix} material per tile"),
            x_label: "frame side (pixels)".into(),
            y_label: "ms".into(),
            log_x: true,
            log_y: true,
            series: variants
                .iter()
                .map(|v| Series {
                    label: v.clone(),
                    points: self
                        .sizes
                        .iter()
                        .filter_map(|&s| {
                            self.median(v, s, first_mix, false)
                                .map(|ms| (f64::from(s), ms))
                        })
                        .collect(),
                })
                .collect(),
            legend: Some(SeriesLabelPosition::UpperLeft),
            markers: true,
            ..Default::default()
        };
        let s6 = self.table6_size();
        let speedup = Panel {
            title: format!(
                "separate / shared at {}²",
                s6.map_or("–".to_owned(), |s| s.to_string())
            ),
            x_label: "materials per 8×8 tile".into(),
            y_label: "speed-up of the shared decoder".into(),
            series: variants
                .iter()
                .map(|v| Series {
                    label: v.clone(),
                    points: s6.map_or_else(Vec::new, |s| {
                        self.mixes
                            .iter()
                            .filter_map(|&k| {
                                Some((
                                    f64::from(k),
                                    self.median(v, s, k, false)? / self.median(v, s, k, true)?,
                                ))
                            })
                            .collect()
                    }),
                })
                .collect(),
            references: vec![("1×".into(), 1.0)],
            legend: Some(SeriesLabelPosition::UpperLeft),
            markers: true,
            ..Default::default()
        };
        write_panels_png(path, &[time, speedup], 1600, 700)?;
        Ok(())
    }
}

/// Write `report` into `dir` (created when missing): `decode.json`, `decode.csv`,
/// `decode.md`, `decode.png`. Returns the Markdown.
pub fn write_decode_report(
    dir: &std::path::Path,
    report: &DecodeBenchReport,
) -> Result<String, BenchError> {
    super::output::write_report_files(
        dir,
        "decode",
        report,
        report.csv(),
        report.markdown(),
        |path| report.write_png(path),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tile_holds_the_asked_number_of_materials() {
        for mix in [1, 2, 5, 10, 16] {
            for (tx, ty) in [(0, 0), (3, 7), (12, 1)] {
                let mut seen = Vec::new();
                for li in 0..64 {
                    let p = synthetic_pixel(tx * 8 + li % 8, ty * 8 + li / 8, mix, 16, 1024);
                    let m = p.word & 0xF_FFFF;
                    if !seen.contains(&m) {
                        seen.push(m);
                    }
                }
                assert_eq!(seen.len(), mix as usize, "tile ({tx}, {ty}), k = {mix}");
            }
        }
    }

    #[test]
    fn the_plan_starts_with_table_5_then_table_6() {
        let opts = DecodeBenchOptions::full(vec![NtcKernel::F32]);
        let cases = plan(&opts);
        assert_eq!(
            &cases[..5],
            &[512, 1024, 2048, 4096, 8192].map(|s| (s, 1, false))
        );
        assert_eq!(cases[5], (1024, 1, true));
        assert_eq!(cases[6], (1024, 2, false));
        // Every size × mix × sharing once.
        assert_eq!(cases.len(), 5 * 5 * 2);
    }

    #[test]
    fn the_f32_peak_reference_follows_the_chain() {
        // seed 0: every chain multiplies by 0.999 and adds nothing.
        let s = peak_reference(0, 2, false);
        let want: f32 = (0..16).map(|k| k as f32 * 0.999 * 0.999).sum();
        assert!((s - want).abs() < 1e-4, "{s} {want}");
        assert!(peak_reference(0, 2, true) > 0.0);
    }
}
