//! Block compression on the GPU (`shaders/bcn_encode.wgsl`): BC1, BC4, BC5 and BC7
//! blocks of an RGBA8 image, one thread per 4×4 block, written row by row into a buffer
//! at a row pitch a buffer → texture copy accepts.
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

/// Blocks per workgroup side (`@workgroup_size(8, 8)`).
pub const WORKGROUP_SIDE: u32 = 8;

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

/// WGSL `Params` of `bcn_encode.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct EncodeParams {
    /// Blocks per row.
    pub blocks_x: u32,
    /// Blocks per column.
    pub blocks_y: u32,
    /// u32 words between block rows in the output.
    pub row_words: u32,
    /// The channel BC4 encodes.
    pub channel: u32,
}

/// The level to encode: a view of one RGBA8 level and its size in texels.
#[derive(Clone, Copy, Debug)]
pub struct LevelSource<'a> {
    /// A sampled view of exactly that level.
    pub view: &'a wgpu::TextureView,
    /// Its width and height in texels.
    pub size: (u32, u32),
}

/// Where one level's blocks go: the buffer, its first byte and the bytes per block row.
#[derive(Clone, Copy, Debug)]
pub struct BlockTarget<'a> {
    /// A `STORAGE` buffer.
    pub buffer: &'a wgpu::Buffer,
    /// First byte (a multiple of the device's storage offset alignment).
    pub offset: u64,
    /// Bytes between block rows (at least a row of blocks, a multiple of 4).
    pub row_bytes: u32,
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

    /// Record the encoding of `source` as `format` into `target`, in its own compute pass of `encoder` (which writes
    /// `timestamps` when given).
    pub fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        source: LevelSource<'_>,
        format: GpuBlockFormat,
        target: BlockTarget<'_>,
        timestamps: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        let blocks = (source.size.0.div_ceil(4), source.size.1.div_ceil(4));
        let params = EncodeParams {
            blocks_x: blocks.0,
            blocks_y: blocks.1,
            row_words: target.row_bytes / 4,
            channel: match format {
                GpuBlockFormat::Bc4 { channel } => channel,
                _ => 0,
            },
        };
        let uniform = wgpu::util::DeviceExt::create_buffer_init(
            device,
            &wgpu::util::BufferInitDescriptor {
                label: Some(Self::LABEL),
                contents: bytemuck::bytes_of(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            },
        );
        let kernel = self.kernel(format);
        let bind_group = kernel.bind_group(
            device,
            0,
            &[
                (0, uniform.as_entire_binding()),
                (1, wgpu::BindingResource::TextureView(source.view)),
                (
                    2,
                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: target.buffer,
                        offset: target.offset,
                        size: None,
                    }),
                ),
            ],
        );
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(Self::LABEL),
            timestamp_writes: timestamps,
        });
        pass.set_pipeline(kernel.pipeline());
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(
            blocks.0.div_ceil(WORKGROUP_SIDE),
            blocks.1.div_ceil(WORKGROUP_SIDE),
            1,
        );
    }

    /// Encode an RGBA8 image (`width × height`, rows unpadded) and read the blocks back,
    /// rows of blocks without padding (the layout of [`crate::texture::bcn`]'s encoder).
    pub fn encode_image(
        &self,
        ctx: &GpuContext,
        rgba: &[u8],
        (width, height): (u32, u32),
        format: GpuBlockFormat,
    ) -> Result<Vec<u8>, crate::gpu::GpuError> {
        let device = &ctx.device;
        let texture = wgpu::util::DeviceExt::create_texture_with_data(
            device,
            &ctx.queue,
            &crate::gpu::layout::texture_2d(
                Self::LABEL,
                (width, height),
                1,
                wgpu::TextureFormat::Rgba8Unorm,
                wgpu::TextureUsages::TEXTURE_BINDING,
            ),
            wgpu::util::TextureDataOrder::LayerMajor,
            rgba,
        );
        let row_bytes = width.div_ceil(4) * format.block_bytes();
        let bytes = u64::from(row_bytes) * u64::from(height.div_ceil(4));
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(Self::LABEL),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        ctx.error_scope(|| {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(Self::LABEL),
            });
            self.record(
                device,
                &mut encoder,
                LevelSource {
                    view: &texture.create_view(&Default::default()),
                    size: (width, height),
                },
                format,
                BlockTarget {
                    buffer: &buffer,
                    offset: 0,
                    row_bytes,
                },
                None,
            );
            ctx.queue.submit([encoder.finish()]);
        })?;
        crate::gpu::readback::read_buffer(ctx, &buffer, 0..bytes)
    }
}
