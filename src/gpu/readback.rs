//! Blocking readback of textures and buffers to the CPU, for tests, golden images,
//! metrics (PSNR) and offline tools. Not for the frame loop: every call waits for the GPU.
//!
//! Texture copies need rows padded to [`wgpu::COPY_BYTES_PER_ROW_ALIGNMENT`] (256) bytes;
//! [`read_texture`] copies with padded rows and strips the padding, so
//! [`TextureData::bytes`] is tightly packed, row-major, top row first. The pure helpers
//! [`padded_bytes_per_row`] and [`strip_row_padding`] hold that arithmetic.
//!
//! A map callback runs on whichever thread polls the device. When threads share one
//! device (the tests do), a `poll` that waits for the GPU can return while another
//! thread's poll is still about to run this thread's callback, so a blocking read waits on
//! the callback's channel ([`receive_mapped`]) instead of expecting its result at once.

use std::ops::Range;
use std::sync::mpsc;
use std::time::Duration;

use super::{GpuContext, GpuError};

/// How long [`receive_mapped`] waits, once the device is idle, for a map callback that
/// another thread's poll may still be running.
pub const MAP_CALLBACK_GRACE: Duration = Duration::from_secs(2);

/// What a map callback sent on `receiver`: with `wait`, once that device is idle and the
/// callback has run (`Empty` when it has not within [`MAP_CALLBACK_GRACE`]: its work was
/// not submitted); without, only if it already has. `Disconnected` when it was dropped
/// without running.
pub fn receive_mapped<T>(
    receiver: &mpsc::Receiver<T>,
    wait: Option<&GpuContext>,
) -> Result<Result<T, mpsc::TryRecvError>, GpuError> {
    let Some(ctx) = wait else {
        return Ok(receiver.try_recv());
    };
    ctx.wait_idle()?;
    Ok(receiver
        .recv_timeout(MAP_CALLBACK_GRACE)
        .map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => mpsc::TryRecvError::Empty,
            mpsc::RecvTimeoutError::Disconnected => mpsc::TryRecvError::Disconnected,
        }))
}

/// One mip level of one layer of a texture, tightly packed (no row padding).
#[derive(Clone, Debug, PartialEq)]
pub struct TextureData {
    /// Width in texels of the mip level read.
    pub width: u32,
    /// Height in texels of the mip level read.
    pub height: u32,
    /// The texture's format. For a combined depth-stencil format only the depth aspect
    /// was copied (e.g. `Depth32FloatStencil8` holds one f32 per texel).
    pub format: wgpu::TextureFormat,
    /// Row-major texel data, top row first, rows of `width × bytes per texel` bytes (for
    /// block-compressed formats: rows of blocks).
    pub bytes: Vec<u8>,
}

impl TextureData {
    /// The raw, tightly packed bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Number of texels (`width × height`).
    pub fn texel_count(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// The bytes of texel (x, y) for uncompressed formats.
    ///
    /// # Panics
    /// When (x, y) lies outside the image or the format is block-compressed.
    pub fn texel(&self, x: u32, y: u32) -> &[u8] {
        assert!(
            x < self.width && y < self.height,
            "texel ({x}, {y}) outside {}×{}",
            self.width,
            self.height
        );
        assert!(
            !self.format.is_compressed(),
            "texel() on block-compressed {:?}",
            self.format
        );
        let size = self.bytes.len() / self.texel_count();
        let start = (y as usize * self.width as usize + x as usize) * size;
        &self.bytes[start..start + size]
    }

    /// The texels as f32, components in storage order (so `n × components` values).
    ///
    /// Supported: `R16Float`, `Rg16Float`, `Rgba16Float`, `R32Float`, `Rg32Float`,
    /// `Rgba32Float`, `Depth32Float` (and the depth aspect of `Depth32FloatStencil8`),
    /// and the 8-bit unorm formats (`R8Unorm`, `Rg8Unorm`, `Rgba8Unorm[Srgb]`,
    /// `Bgra8Unorm[Srgb]`) as `value / 255` with no sRGB decode and no channel swizzle.
    pub fn to_f32(&self) -> Result<Vec<f32>, GpuError> {
        use wgpu::TextureFormat as F;
        match self.format {
            F::R16Float | F::Rg16Float | F::Rgba16Float => Ok(self
                .bytes
                .chunks_exact(2)
                .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                .collect()),
            F::R32Float
            | F::Rg32Float
            | F::Rgba32Float
            | F::Depth32Float
            | F::Depth32FloatStencil8 => Ok(self
                .bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()),
            F::R8Unorm
            | F::Rg8Unorm
            | F::Rgba8Unorm
            | F::Rgba8UnormSrgb
            | F::Bgra8Unorm
            | F::Bgra8UnormSrgb => Ok(self.bytes.iter().map(|&b| f32::from(b) / 255.0).collect()),
            other => Err(GpuError::Readback(format!(
                "TextureData::to_f32 does not handle {other:?}; use as_bytes()"
            ))),
        }
    }

    /// The texels as u32, components in storage order.
    ///
    /// Supported: `R32Uint`, `Rg32Uint`, `Rgba32Uint`, and widened from smaller integer
    /// formats `R8Uint`, `Rg8Uint`, `Rgba8Uint`, `R16Uint`, `Rg16Uint`, `Rgba16Uint`, and the
    /// stencil aspect of `Stencil8`.
    pub fn to_u32(&self) -> Result<Vec<u32>, GpuError> {
        use wgpu::TextureFormat as F;
        match self.format {
            F::R32Uint | F::Rg32Uint | F::Rgba32Uint => Ok(self
                .bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()),
            F::R16Uint | F::Rg16Uint | F::Rgba16Uint => Ok(self
                .bytes
                .chunks_exact(2)
                .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                .collect()),
            F::R8Uint | F::Rg8Uint | F::Rgba8Uint | F::Stencil8 => {
                Ok(self.bytes.iter().map(|&b| u32::from(b)).collect())
            }
            other => Err(GpuError::Readback(format!(
                "TextureData::to_u32 does not handle {other:?}; use as_bytes()"
            ))),
        }
    }
}

/// `unpadded` bytes per row rounded up to [`wgpu::COPY_BYTES_PER_ROW_ALIGNMENT`].
pub fn padded_bytes_per_row(unpadded: u32) -> u32 {
    unpadded.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT
}

/// Copies `rows` rows of `unpadded` bytes out of `padded_data`, whose rows start every
/// `padded` bytes.
///
/// # Panics
/// When `unpadded > padded` or `padded_data` is shorter than `(rows - 1) × padded + unpadded`.
pub fn strip_row_padding(
    padded_data: &[u8],
    unpadded: usize,
    padded: usize,
    rows: usize,
) -> Vec<u8> {
    assert!(
        unpadded <= padded,
        "row of {unpadded} bytes does not fit a {padded}-byte stride"
    );
    let mut out = Vec::with_capacity(unpadded * rows);
    for row in 0..rows {
        let start = row * padded;
        out.extend_from_slice(&padded_data[start..start + unpadded]);
    }
    out
}

/// IEEE 754 binary16 → f32, exact (subnormals, infinities and NaN included).
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match (exponent, mantissa) {
        (0, 0) => 0,
        // Subnormal: value = mantissa × 2^-24, exactly representable in f32.
        (0, m) => (m as f32 * f32::from_bits(0x3380_0000)).to_bits(),
        (0x1f, m) => 0x7f80_0000 | (m << 13),
        (e, m) => ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(sign | magnitude)
}

/// Copies mip `mip_level` of array layer (or 3D slice) `layer` of `texture` to the CPU.
/// The texture needs `COPY_SRC` usage. Depth formats read their depth aspect, `Stencil8`
/// its stencil aspect; formats wgpu cannot copy (e.g. `Depth24Plus`) are an error.
pub fn read_texture(
    ctx: &GpuContext,
    texture: &wgpu::Texture,
    mip_level: u32,
    layer: u32,
) -> Result<TextureData, GpuError> {
    read_region(ctx, texture, mip_level, layer, None)
}

/// Copies the `size` texels at `origin` of mip 0, layer 0 of `texture` (a small
/// readback, e.g. one pixel or one screen tile; block-compressed formats are read whole
/// by [`read_texture`] instead). The rectangle must lie inside the texture.
pub fn read_texture_rect(
    ctx: &GpuContext,
    texture: &wgpu::Texture,
    origin: (u32, u32),
    size: (u32, u32),
) -> Result<TextureData, GpuError> {
    let inside = origin
        .0
        .checked_add(size.0)
        .is_some_and(|x| x <= texture.width())
        && origin
            .1
            .checked_add(size.1)
            .is_some_and(|y| y <= texture.height());
    if !inside || size.0 == 0 || size.1 == 0 || texture.format().block_dimensions() != (1, 1) {
        return Err(GpuError::Readback(format!(
            "rectangle {size:?} at {origin:?} of a {}×{} {:?} texture: it must be non-empty, \
             inside the texture, of a format without blocks",
            texture.width(),
            texture.height(),
            texture.format()
        )));
    }
    read_region(ctx, texture, 0, 0, Some((origin, size)))
}

/// [`read_texture`] of the whole level, or of `rect` (origin, size) in it.
fn read_region(
    ctx: &GpuContext,
    texture: &wgpu::Texture,
    mip_level: u32,
    layer: u32,
    rect: Option<((u32, u32), (u32, u32))>,
) -> Result<TextureData, GpuError> {
    let format = texture.format();
    if !texture.usage().contains(wgpu::TextureUsages::COPY_SRC) {
        return Err(GpuError::Readback(format!(
            "texture ({format:?}, {:?}) lacks COPY_SRC usage",
            texture.size()
        )));
    }
    if mip_level >= texture.mip_level_count() {
        return Err(GpuError::Readback(format!(
            "mip level {mip_level} requested of a texture with {} levels",
            texture.mip_level_count()
        )));
    }
    let mut size = texture
        .size()
        .mip_level_size(mip_level, texture.dimension());
    if layer >= size.depth_or_array_layers {
        return Err(GpuError::Readback(format!(
            "layer {layer} requested of mip {mip_level} with {} layers",
            size.depth_or_array_layers
        )));
    }
    let (x, y) = match rect {
        Some((origin, (w, h))) => {
            size.width = w;
            size.height = h;
            origin
        }
        None => (0, 0),
    };
    let aspect = if format.has_depth_aspect() {
        wgpu::TextureAspect::DepthOnly
    } else if format.has_stencil_aspect() {
        wgpu::TextureAspect::StencilOnly
    } else {
        wgpu::TextureAspect::All
    };
    let block_bytes = format.block_copy_size(Some(aspect)).ok_or_else(|| {
        GpuError::Readback(format!(
            "format {format:?} ({aspect:?}) cannot be copied to a buffer"
        ))
    })?;
    let (block_w, block_h) = format.block_dimensions();
    let physical = wgpu::Extent3d {
        depth_or_array_layers: 1,
        ..size.physical_size(format)
    };
    let rows = physical.height / block_h;
    let unpadded = physical.width / block_w * block_bytes;
    let padded = padded_bytes_per_row(unpadded);

    let buffer = staging_buffer(
        &ctx.device,
        "read_texture staging",
        u64::from(padded) * u64::from(rows),
    );
    ctx.error_scope(|| {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("read_texture"),
            });
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture,
                mip_level,
                origin: wgpu::Origin3d { x, y, z: layer },
                aspect,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &buffer,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded),
                    rows_per_image: Some(rows),
                },
            },
            physical,
        );
        ctx.queue.submit([encoder.finish()]);
    })?;
    let data = map_and_read(ctx, &buffer, 0..buffer.size())?;
    Ok(TextureData {
        width: size.width,
        height: size.height,
        format,
        bytes: strip_row_padding(&data, unpadded as usize, padded as usize, rows as usize),
    })
}

/// Copies `range` (bytes) of `buffer` to the CPU. The buffer needs `COPY_SRC` usage; the
/// range start must be a multiple of 4 ([`wgpu::COPY_BUFFER_ALIGNMENT`]); any length is
/// fine (the copy is rounded up to 4 bytes and truncated back).
pub fn read_buffer(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    range: Range<u64>,
) -> Result<Vec<u8>, GpuError> {
    if range.start > range.end || range.end > buffer.size() {
        return Err(GpuError::Readback(format!(
            "range {range:?} outside buffer of {} bytes",
            buffer.size()
        )));
    }
    if !range.start.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT) {
        return Err(GpuError::Readback(format!(
            "range start {} is not a multiple of {}",
            range.start,
            wgpu::COPY_BUFFER_ALIGNMENT
        )));
    }
    if !buffer.usage().contains(wgpu::BufferUsages::COPY_SRC) {
        return Err(GpuError::Readback("buffer lacks COPY_SRC usage".to_owned()));
    }
    let len = range.end - range.start;
    if len == 0 {
        return Ok(Vec::new());
    }
    // Rounding up may pass the buffer's end only when its size is not a multiple of 4,
    // which wgpu does not allow for COPY_SRC buffers.
    let copy_len = len.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
    let staging = staging_buffer(&ctx.device, "read_buffer staging", copy_len);
    ctx.error_scope(|| {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("read_buffer"),
            });
        encoder.copy_buffer_to_buffer(buffer, range.start, &staging, 0, copy_len);
        ctx.queue.submit([encoder.finish()]);
    })?;
    let mut data = map_and_read(ctx, &staging, 0..copy_len)?;
    data.truncate(len as usize);
    Ok(data)
}

/// A buffer of `size` bytes that copies land in and the CPU maps for reading.
pub fn staging_buffer(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    })
}

/// Maps `range` of a `MAP_READ` buffer, waits for the GPU, copies the bytes out, unmaps.
fn map_and_read(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    range: Range<u64>,
) -> Result<Vec<u8>, GpuError> {
    let (sender, receiver) = mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, range.clone(), move |result| {
        // The receiver outlives the wait below; a send error means nobody listens anymore.
        let _ = sender.send(result);
    });
    receive_mapped(&receiver, Some(ctx))?
        .map_err(|e| GpuError::Readback(format!("map callback never ran: {e}")))?
        .map_err(|e| GpuError::Readback(format!("mapping failed: {e}")))?;
    let data = buffer
        .get_mapped_range(range)
        .map_err(|e| GpuError::Readback(format!("mapped range: {e}")))?
        .to_vec();
    buffer.unmap();
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_rounds_rows_up_to_256() {
        assert_eq!(padded_bytes_per_row(0), 0);
        assert_eq!(padded_bytes_per_row(1), 256);
        assert_eq!(padded_bytes_per_row(12), 256); // 3 × Rgba8
        assert_eq!(padded_bytes_per_row(256), 256);
        assert_eq!(padded_bytes_per_row(257), 512);
        assert_eq!(padded_bytes_per_row(1920 * 8), 15360); // 1080p Rgba16Float, already aligned
    }

    #[test]
    fn strip_keeps_only_row_payloads() {
        // 3 rows of 5 bytes in a stride of 8; padding filled with 0xEE.
        let mut padded = Vec::new();
        for row in 0..3u8 {
            padded.extend((0..5).map(|i| row * 10 + i));
            padded.extend([0xEE; 3]);
        }
        let tight = strip_row_padding(&padded, 5, 8, 3);
        assert_eq!(
            tight,
            [0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 20, 21, 22, 23, 24]
        );
        // The last row may end without padding.
        assert_eq!(strip_row_padding(&padded[..21], 5, 8, 3), tight);
    }

    #[test]
    fn f16_conversion_is_exact() {
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert!(f16_to_f32(0x8000).is_sign_negative());
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn texture_data_conversions() {
        let data = TextureData {
            width: 2,
            height: 1,
            format: wgpu::TextureFormat::Rg16Float,
            bytes: [0x3c00u16, 0x4000, 0xbc00, 0x0000]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        };
        assert_eq!(data.to_f32().unwrap(), [1.0, 2.0, -1.0, 0.0]);
        assert_eq!(data.texel(1, 0), [0x00, 0xbc, 0, 0]);
        assert!(data.to_u32().is_err());
        let ints = TextureData {
            width: 1,
            height: 1,
            format: wgpu::TextureFormat::Rg32Uint,
            bytes: [7u32, u32::MAX]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        };
        assert_eq!(ints.to_u32().unwrap(), [7, u32::MAX]);
    }
}
