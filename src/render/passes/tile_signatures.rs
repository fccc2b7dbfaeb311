//! Co-occurrence pass (`shaders/cooccurrence.wgsl`): per screen tile, the ascending list
//! of the distinct texture sets of its pixels (its *signature*), from which the host
//! builds a view's signature histogram for the co-occurrence record of `cluster`.
//!
//! The definition is the divergence statistics' per-tile distinct-decoder list
//! ([`crate::screen::divergence::tile_decoders`]) under a material → texture-set
//! map, which is what the record's CPU reference (`ViewCounts::count` in
//! `cluster::cooccurrence`) counts; the tests compare the two exactly. The pass reads the
//! G-buffer's material ids and the map (a [`DecoderMap`] whose entries are set indices)
//! and writes a [`SignatureBuffer`] it is handed.
//!
//! **Representation.** Every tile owns a slot of `pixels + 1` words of one storage
//! buffer: the number of sets, then the sets, ascending. A tile cannot show more distinct
//! sets than it has pixels, so the slot always holds the whole list and the result is
//! exact whatever the scene; the buffer is `(pixels + tiles) · 4` bytes (8.4 MB at
//! 1920×1080 for every tile size), read back once per view, and the histogram is built
//! on the host by [`SignatureBuffer::read_histogram`]. Hashing signatures on the GPU would
//! read back less but could collide (no longer exact), and a global list with an atomic
//! cursor would need a second readback for its length; views are recorded offline, so
//! one bounded readback per view is the simpler exact choice. Pair counts (tiles where
//! two sets appear) follow from the signatures on the host.

use std::collections::BTreeMap;

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, KernelError};
use crate::gpu::{GpuContext, GpuError, read_buffer};
use crate::render::passes::divergence::DecoderMap;
use crate::render::targets::Target;
use crate::screen::tiles::TileSize;

/// What the co-occurrence pass reads.
#[derive(Clone, Copy, Debug)]
pub struct CooccurrenceInputs<'a> {
    /// The G-buffer's material words.
    pub material_ids: &'a Target,
    /// Material id → texture-set index ([`crate::screen::divergence::NO_DECODER`]:
    /// no set; ids past the map have none either).
    pub set_map: &'a DecoderMap,
}

/// The per-tile signature slots of one view (the pass's output).
#[derive(Debug)]
pub struct SignatureBuffer {
    tile: TileSize,
    size: (u32, u32),
    buffer: wgpu::Buffer,
}

impl SignatureBuffer {
    /// Slots for a `size` view cut into `tile` tiles; an error when the buffer would
    /// exceed the device's storage-buffer limits.
    pub fn new(ctx: &GpuContext, tile: TileSize, size: (u32, u32)) -> Result<Self, GpuError> {
        let bytes = Self::bytes(tile, size);
        let limits = ctx.device.limits();
        let limit = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        if bytes > limit {
            return Err(GpuError::Validation(format!(
                "the co-occurrence signatures of a {}×{} view in {tile} tiles need {bytes} \
                 bytes, more than this device binds in one storage buffer ({limit}); record \
                 at a smaller size",
                size.0, size.1
            )));
        }
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("cooccurrence.signatures"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Ok(Self { tile, size, buffer })
    }

    /// Bytes of the slots: `pixels + 1` words per tile.
    pub fn bytes(tile: TileSize, size: (u32, u32)) -> u64 {
        let (w, h) = tile.grid(size);
        u64::from(w) * u64::from(h) * (u64::from(tile.pixels()) + 1) * 4
    }

    /// Blocking, after the pass that wrote the slots was submitted: the histogram of the
    /// view's non-empty signatures (set list → tiles). An error when a slot is malformed
    /// (a count past the slot, sets not ascending), which the pass never writes.
    pub fn read_histogram(&self, ctx: &GpuContext) -> Result<BTreeMap<Vec<u32>, u64>, GpuError> {
        let bytes = read_buffer(ctx, &self.buffer, 0..self.buffer.size())?;
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        let slot = self.tile.pixels() as usize + 1;
        let mut histogram = BTreeMap::new();
        for (t, slot) in words.chunks_exact(slot).enumerate() {
            let count = slot[0] as usize;
            let sets = slot.get(1..1 + count).ok_or_else(|| {
                GpuError::Readback(format!("co-occurrence tile {t}: {count} sets"))
            })?;
            if !sets.windows(2).all(|w| w[0] < w[1]) {
                return Err(GpuError::Readback(format!(
                    "co-occurrence tile {t}: sets {sets:?} are not ascending"
                )));
            }
            if count > 0 {
                *histogram.entry(sets.to_vec()).or_insert(0) += 1;
            }
        }
        Ok(histogram)
    }
}

/// The co-occurrence pass for one tile size.
#[derive(Debug)]
pub struct CooccurrencePass {
    tile: TileSize,
    kernel: ComputeKernel,
}

impl CooccurrencePass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "cooccurrence";

    /// Build the pipeline for `tile`.
    pub fn new(ctx: &GpuContext, tile: TileSize) -> Result<Self, KernelError> {
        let kernel = super::tiled_kernel(
            ctx,
            tile,
            &KernelDesc::new(Self::LABEL, "cooccurrence.wgsl", "signature"),
        )?;
        Ok(Self { tile, kernel })
    }

    /// Record the signatures of `inputs` into `out`, whose tile and size must be this
    /// pass's tile and the material ids' size (else nothing is recorded and the error
    /// says which differs).
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &CooccurrenceInputs<'_>,
        out: &SignatureBuffer,
    ) -> Result<(), GpuError> {
        let ids = &inputs.material_ids.texture;
        let size = (ids.width(), ids.height());
        if out.tile != self.tile || out.size != size {
            return Err(GpuError::Validation(format!(
                "co-occurrence: a {} pass over {}×{} material ids cannot write signatures of \
                 {} tiles of a {}×{} view",
                self.tile, size.0, size.1, out.tile, out.size.0, out.size.1
            )));
        }
        let resources = &[
            (
                0,
                wgpu::BindingResource::TextureView(&inputs.material_ids.view),
            ),
            (1, inputs.set_map.buffer().as_entire_binding()),
            (2, out.buffer.as_entire_binding()),
        ];
        let grid = self.tile.grid(size);
        self.kernel.run(frame, resources, grid);
        Ok(())
    }
}
