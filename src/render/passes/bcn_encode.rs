//! Block compression on the GPU (`shaders/bcn_encode.wgsl`): BC1, BC4, BC5 and BC7
//! blocks of RGBA8 mips, one thread per 4×4 block, each level's blocks written row by
//! row into a buffer at a row pitch a buffer → texture copy accepts. One dispatch covers
//! up to [`MAX_LEVELS`] levels (a whole mip chain), so the small levels, a handful of
//! long-running threads each, run beside the large one instead of one dispatch each.
//!
//! BC1 fits four colours and, when that is not exact, three (never transparent black),
//! and keeps the better; BC4 and BC5 fit the 8-value mode. BC7 tries, per block, mode 6
//! (RGBA on one line), mode 5 in each of the four channel rotations and mode 4 in the
//! best of them (a channel apart from the other three: the normal/occlusion/roughness
//! group), and two-subset modes (7 when the block has alpha, else 1 and 3) in the two
//! partition shapes whose subsets lie closest to a line. Every fit refines its endpoints
//! by least squares, and the block keeps the mode with the smallest squared error in
//! the decoded 0–255 values (the shader's header says exactly how, and what it costs).
//!
//! The CPU reference is the ISPC encoder of [`crate::texture::bcn`] with the
//! `texture2ddecoder` decoder: the tests bound the decoded error of these blocks by the
//! reference's on the same texels, and decode every BC7 mode the encoder writes with a
//! second decoder (`bcdec_rs`). `neurotex bench bcn` compares the two on texture sets
//! ([`crate::render::transcode::encoder_quality`]).

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, KernelError};
use crate::texture::bcn::BlockFormat;

/// Blocks per workgroup (`@workgroup_size(64)`), one thread each.
pub const WORKGROUP_BLOCKS: u32 = 64;

/// Levels one dispatch encodes at most (the shader's `MAX_LEVELS`); [`BcnEncodePass::record`]
/// dispatches a longer list in parts.
pub const MAX_LEVELS: usize = 16;

/// What the pass encodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuBlockFormat {
    /// RGB, 8 bytes per block.
    Bc1,
    /// One channel (0–3) of the source, 8 bytes per block.
    Bc4 {
        /// The source channel.
        channel: u32,
    },
    /// Red and green, 16 bytes per block.
    Bc5,
    /// RGBA (modes 1, 3, 4, 5, 6, 7), 16 bytes per block.
    Bc7,
}

impl GpuBlockFormat {
    /// Bytes per block.
    pub const fn block_bytes(self) -> u32 {
        match self {
            Self::Bc1 | Self::Bc4 { .. } => 8,
            Self::Bc5 | Self::Bc7 => 16,
        }
    }

    /// The format of the CPU reference ([`crate::texture::bcn`]) that decodes these blocks.
    pub const fn reference_format(self) -> BlockFormat {
        match self {
            Self::Bc1 => BlockFormat::Bc1,
            Self::Bc4 { .. } => BlockFormat::Bc4,
            Self::Bc5 => BlockFormat::Bc5,
            Self::Bc7 => BlockFormat::Bc7,
        }
    }

    fn entry(self) -> &'static str {
        match self {
            Self::Bc1 => "bc1",
            Self::Bc4 { .. } => "bc4",
            Self::Bc5 => "bc5",
            Self::Bc7 => "bc7",
        }
    }
}

/// WGSL `Level` of `bcn_encode.wgsl`: one level of a dispatch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct LevelParams {
    /// Blocks per row.
    pub blocks_x: u32,
    /// Blocks per column.
    pub blocks_y: u32,
    /// The number of the level's first block among the dispatch's blocks.
    pub first_block: u32,
    /// The mip of the source it reads.
    pub mip: u32,
    /// The u32 word of the block buffer its first block starts at.
    pub first_word: u32,
    /// u32 words between the starts of two block rows.
    pub row_words: u32,
    /// Its width and height in texels.
    pub size: [u32; 2],
}

/// WGSL `Params` of `bcn_encode.wgsl`: one dispatch.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct EncodeParams {
    /// Levels used in `levels`.
    pub level_count: u32,
    /// The channel BC4 encodes.
    pub channel: u32,
    /// Workgroups per row of the dispatch grid.
    pub groups_x: u32,
    _pad: u32,
    /// The levels, in order of their first block.
    pub levels: [LevelParams; MAX_LEVELS],
}

/// One level to encode: the mip of the source it reads, that mip's size in texels, and
/// where its blocks go in the block buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodeLevel {
    /// The mip of the source view.
    pub mip: u32,
    /// Its width and height in texels.
    pub size: (u32, u32),
    /// The byte of the block buffer its first block starts at (a multiple of 4).
    pub first_byte: u64,
    /// Bytes between the starts of two block rows (at least a row of blocks, a multiple
    /// of 4).
    pub row_bytes: u32,
}

impl EncodeLevel {
    /// Blocks per row and per column.
    pub fn blocks(&self) -> (u32, u32) {
        (self.size.0.div_ceil(4), self.size.1.div_ceil(4))
    }
}

/// What one [`BcnEncodePass::record`] encodes.
#[derive(Clone, Copy, Debug)]
pub struct EncodeJob<'a> {
    /// A sampled view of RGBA8 mips.
    pub source: &'a wgpu::TextureView,
    /// The levels of `source` to encode and where their blocks go.
    pub levels: &'a [EncodeLevel],
    /// Their block format.
    pub format: GpuBlockFormat,
    /// The block buffer (`STORAGE`).
    pub blocks: &'a wgpu::Buffer,
}

/// The four encoders (one pipeline per entry point, one layout).
#[derive(Debug)]
pub struct BcnEncodePass {
    kernels: [ComputeKernel; 4],
}

impl BcnEncodePass {
    /// Label of the pass and its wgpu objects.
    pub const LABEL: &'static str = "bcn.encode";

    /// Build the pipelines.
    pub fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let bc1 = ComputeKernel::new(ctx, &KernelDesc::new(Self::LABEL, "bcn_encode.wgsl", "bc1"))?;
        let bc4 = bc1.sibling(ctx, Self::LABEL, "bc4")?;
        let bc5 = bc1.sibling(ctx, Self::LABEL, "bc5")?;
        let bc7 = bc1.sibling(ctx, Self::LABEL, "bc7")?;
        Ok(Self {
            kernels: [bc1, bc4, bc5, bc7],
        })
    }

    fn kernel(&self, format: GpuBlockFormat) -> &ComputeKernel {
        let i = ["bc1", "bc4", "bc5", "bc7"]
            .iter()
            .position(|e| *e == format.entry())
            .unwrap_or(0);
        &self.kernels[i]
    }

    /// Record `job` in one compute pass of `encoder` (which writes `timestamps` when
    /// given): one dispatch per [`MAX_LEVELS`] levels, so that a mip chain's small levels
    /// run beside its large ones.
    pub fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        job: EncodeJob<'_>,
        timestamps: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        let EncodeJob {
            source,
            levels,
            format,
            blocks,
        } = job;
        let kernel = self.kernel(format);
        let max_groups = device.limits().max_compute_workgroups_per_dimension.max(1);
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(Self::LABEL),
            timestamp_writes: timestamps,
        });
        pass.set_pipeline(kernel.pipeline());
        for part in levels.chunks(MAX_LEVELS) {
            let mut params = EncodeParams {
                level_count: part.len() as u32,
                channel: match format {
                    GpuBlockFormat::Bc4 { channel } => channel,
                    _ => 0,
                },
                groups_x: 1,
                _pad: 0,
                levels: [LevelParams::default(); MAX_LEVELS],
            };
            let mut total = 0u32;
            for (slot, level) in params.levels.iter_mut().zip(part) {
                let (blocks_x, blocks_y) = level.blocks();
                // Word offsets and block numbers fit u32: the buffer binding holds at most
                // `max_storage_buffer_binding_size` (a u32) bytes.
                *slot = LevelParams {
                    blocks_x,
                    blocks_y,
                    first_block: total,
                    mip: level.mip,
                    first_word: (level.first_byte / 4) as u32,
                    row_words: level.row_bytes / 4,
                    size: [level.size.0, level.size.1],
                };
                total = total.saturating_add(blocks_x.saturating_mul(blocks_y));
            }
            let groups = total.div_ceil(WORKGROUP_BLOCKS);
            params.groups_x = groups.clamp(1, max_groups);
            let uniform = wgpu::util::DeviceExt::create_buffer_init(
                device,
                &wgpu::util::BufferInitDescriptor {
                    label: Some(Self::LABEL),
                    contents: bytemuck::bytes_of(&params),
                    usage: wgpu::BufferUsages::UNIFORM,
                },
            );
            let bind_group = kernel.bind_group(
                device,
                0,
                &[
                    (0, uniform.as_entire_binding()),
                    (1, wgpu::BindingResource::TextureView(source)),
                    (2, blocks.as_entire_binding()),
                ],
            );
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(params.groups_x, groups.div_ceil(params.groups_x), 1);
        }
    }

    /// Encode an RGBA8 image (`width × height`, rows unpadded) and read the blocks back,
    /// rows of blocks without padding (the layout of [`crate::texture::bcn`]'s encoder).
    pub fn encode_image(
        &self,
        ctx: &GpuContext,
        rgba: &[u8],
        size: (u32, u32),
        format: GpuBlockFormat,
    ) -> Result<Vec<u8>, crate::gpu::GpuError> {
        let mut levels = self.encode_chain(ctx, &[(rgba, size)], format)?;
        Ok(levels.pop().unwrap_or_default())
    }

    /// Encode a mip chain of RGBA8 images (level `l` of `(w >> l).max(1) × (h >> l).max(1)`
    /// texels for level 0's `w × h`, rows unpadded) in one dispatch and read each level's
    /// blocks back as [`Self::encode_image`] lays them out. A chain whose sizes or bytes do
    /// not match is refused before anything is allocated.
    pub fn encode_chain(
        &self,
        ctx: &GpuContext,
        chain: &[(&[u8], (u32, u32))],
        format: GpuBlockFormat,
    ) -> Result<Vec<Vec<u8>>, crate::gpu::GpuError> {
        let refuse = |what: String| Err(crate::gpu::GpuError::Validation(what));
        let Some(&(_, (width, height))) = chain.first() else {
            return Ok(Vec::new());
        };
        let mut levels = Vec::with_capacity(chain.len());
        let mut total = 0u64;
        for (mip, &(rgba, size)) in chain.iter().enumerate() {
            let expected = (
                width.checked_shr(mip as u32).unwrap_or(0).max(1),
                height.checked_shr(mip as u32).unwrap_or(0).max(1),
            );
            let texels = u64::from(size.0) * u64::from(size.1);
            if size != expected || rgba.len() as u64 != texels * 4 {
                return refuse(format!(
                    "level {mip} of a mip chain to encode is {}×{} with {} bytes; \
                     {}×{} with 4 bytes per texel expected",
                    size.0,
                    size.1,
                    rgba.len(),
                    expected.0,
                    expected.1
                ));
            }
            let level = EncodeLevel {
                mip: mip as u32,
                size,
                first_byte: total,
                row_bytes: size.0.div_ceil(4) * format.block_bytes(),
            };
            total += u64::from(level.row_bytes) * u64::from(level.blocks().1);
            levels.push(level);
        }
        let device = &ctx.device;
        let buffer = ctx.error_scope(|| {
            let texture = wgpu::util::DeviceExt::create_texture_with_data(
                device,
                &ctx.queue,
                &crate::gpu::layout::texture_2d(
                    Self::LABEL,
                    (width, height),
                    chain.len() as u32,
                    wgpu::TextureFormat::Rgba8Unorm,
                    wgpu::TextureUsages::TEXTURE_BINDING,
                ),
                wgpu::util::TextureDataOrder::LayerMajor,
                &chain
                    .iter()
                    .flat_map(|(rgba, _)| rgba.iter().copied())
                    .collect::<Vec<u8>>(),
            );
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(Self::LABEL),
                size: total,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(Self::LABEL),
            });
            let view = texture.create_view(&Default::default());
            let job = EncodeJob {
                source: &view,
                levels: &levels,
                format,
                blocks: &buffer,
            };
            self.record(device, &mut encoder, job, None);
            ctx.queue.submit([encoder.finish()]);
            buffer
        })?;
        let bytes = crate::gpu::readback::read_buffer(ctx, &buffer, 0..total)?;
        Ok(levels
            .iter()
            .map(|l| {
                let start = l.first_byte as usize;
                bytes[start..start + (l.row_bytes * l.blocks().1) as usize].to_vec()
            })
            .collect())
    }
}
