//! The synthetic content of `bench decode`: random-weight packages, the generated
//! G-buffer of each size with `k` materials per 8×8 tile, and building a kernel's pass
//! under a time budget.

use super::*;
use crate::gpu::upload::write_level;

/// The synthetic package pair and what every case shares.
pub(super) struct Content {
    pub(super) config: NtcConfig,
    /// [separate, shared].
    pub(super) packages: [NtcPackage; 2],
    pub(super) gpu: [NtcSceneGpu; 2],
    pub(super) map: Vec<Option<u32>>,
    pub(super) materials: Vec<MaterialData>,
    pub(super) material_buffer: wgpu::Buffer,
    pub(super) noise: BlueNoise,
    pub(super) frame: wgpu::Buffer,
}

/// Random-weight decoders of the default layout for `count` materials of `side`², random
/// latent codes; material `m` uses decoder `m` (separate) or decoder 0 (shared).
pub(super) fn synthetic_packages(
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
    pub(super) fn new(ctx: &GpuContext, opts: &DecodeBenchOptions) -> Result<Self, BenchError> {
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
pub(super) struct Frame {
    pub(super) size: u32,
    pub(super) mix: u32,
    pub(super) gbuffer: GBuffer,
    pub(super) targets: MaterialTargets,
}

impl Frame {
    pub(super) fn new(ctx: &GpuContext, opts: &DecodeBenchOptions, size: u32, mix: u32) -> Self {
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
        let written = |label: &str, fmt, bytes: &[u8]| {
            let t = Target::new(device, label, dims, fmt, wgpu::TextureUsages::COPY_DST);
            write_level(&ctx.queue, &t.texture, 0, bytes);
            t
        };
        let none = wgpu::TextureUsages::empty();
        let gbuffer = GBuffer {
            normal_tangent: written("bench.normal_tangent", format::NORMAL_TANGENT, &nt),
            uv: written("bench.uv", format::UV, &uv),
            uv_grad: written("bench.uv_grad", format::UV_GRAD, &grad),
            material: written("bench.material", format::MATERIAL, &words),
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
    pub(super) fn poison(&self, ctx: &GpuContext) {
        let nan: Vec<u8> =
            std::iter::repeat_n([0x00u8, 0x7E], (self.size * self.size * 4) as usize)
                .flatten()
                .collect();
        for t in self.target_list() {
            write_level(&ctx.queue, &t.texture, 0, &nan);
        }
    }

    pub(super) fn target_list(&self) -> [&Target; 3] {
        [
            &self.targets.base_color,
            &self.targets.normal_rm,
            &self.targets.emissive_ao,
        ]
    }
}

/// Build `kernel`'s pass (running `stage` of the decode) on another thread; give up waiting after `budget` (the thread
/// finishes on its own; its pipelines are dropped).
pub(super) fn build_pass(
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
