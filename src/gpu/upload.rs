//! Writing CPU texels into a texture level: the counterpart of [`super::readback`] for
//! uploads. The bytes are tightly packed, row-major, top row first (block rows for
//! block-compressed formats); wgpu's queue pads nothing on writes, so no staging is needed.

/// Write `bytes` into the whole of mip `level` (layer 0) of `texture`.
///
/// # Panics
///
/// When the format has no fixed block size (depth/stencil combinations) — a programming
/// error: such textures are never written from the CPU.
pub fn write_level(queue: &wgpu::Queue, texture: &wgpu::Texture, level: u32, bytes: &[u8]) {
    let format = texture.format();
    let extent = texture
        .size()
        .mip_level_size(level, texture.dimension())
        .physical_size(format);
    let (block_width, block_height) = format.block_dimensions();
    let block_bytes = format
        .block_copy_size(None)
        .expect("a texture written from the CPU has a block size");
    queue.write_texture(
        wgpu::TexelCopyTextureInfo {
            texture,
            mip_level: level,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        },
        bytes,
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(extent.width / block_width * block_bytes),
            rows_per_image: Some(extent.height / block_height),
        },
        wgpu::Extent3d {
            depth_or_array_layers: 1,
            ..extent
        },
    );
}
