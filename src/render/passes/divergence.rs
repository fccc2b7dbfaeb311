//! Divergence pass (`shaders/divergence.wgsl`): per screen tile, the distinct materials
//! and the distinct decoders under the current and the baseline material→decoder maps,
//! written to a tile-resolution texture (for the heatmap) and reduced into the two `D`
//! histograms (for [`DivergenceStats`]).
//!
//! The definitions and the CPU reference live in [`crate::screen::divergence`]; this pass
//! owns only the GPU side: the pipeline for one [`TileSize`], the histogram buffer and a
//! small ring of staging buffers. It reads the G-buffer's material ids and two
//! [`DecoderMap`]s and writes the tile texture it is handed.
//!
//! Each histogram has a bin for every possible `D` (0 to the tile's pixel count), so the
//! sums behind 𝒟 follow exactly from it ([`DivergenceStats::from_histograms`]) and are
//! not accumulated separately: one atomic add per tile and histogram.
//!
//! **Reading the statistics without stalling.** [`DivergencePass::record`] clears the
//! histograms, dispatches one workgroup per tile, then copies the histograms into a free
//! staging buffer of the ring, mapped when the encoder is submitted. The viewer calls
//! [`DivergencePass::try_stats`] once a frame and gets the newest finished frame (usually
//! one or two frames old); headless code calls [`DivergencePass::stats_blocking`] after
//! submitting. When every staging buffer is still in flight, that frame's statistics are
//! dropped rather than waited for. Each buffer in flight holds the receiving end of a
//! channel its map callback sends the result on; a staging buffer whose encoder was
//! dropped without being submitted is noticed (the callback is gone, the channel
//! disconnected) and reused.

use std::sync::mpsc::{self, Receiver, TryRecvError};

use wgpu::util::DeviceExt as _;

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, KernelError};
use crate::gpu::{GpuContext, GpuError, read_texture};
use crate::render::targets::Target;
use crate::screen::divergence::{DivergenceStats, NO_DECODER, TileCounts};
use crate::screen::tiles::TileSize;

/// Format of the tile texture: one texel per tile, the [`TileCounts`] fields in order
/// (r materials, g decoders, b baseline decoders, a pixels with geometry).
pub const TILE_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba32Uint;

/// Staging buffers in the readback ring.
pub const STATS_RING: usize = 3;

/// One staging buffer and, while it is in flight, the frame it holds.
#[derive(Debug)]
struct Slot {
    buffer: wgpu::Buffer,
    /// (frame number, where the map callback sends the map's result).
    in_flight: Option<(u64, Receiver<Result<(), wgpu::BufferAsyncError>>)>,
}

/// A material → decoder map on the GPU: entry `i` is material `i`'s decoder,
/// [`NO_DECODER`] for a material that decodes nothing; ids past the map's end decode
/// nothing.
#[derive(Debug)]
pub struct DecoderMap {
    buffer: wgpu::Buffer,
}

impl DecoderMap {
    /// Upload `map`, padded with [`NO_DECODER`] to at least one entry (bindings cannot be
    /// empty; the padding decodes nothing, like ids past the map).
    pub fn new(device: &wgpu::Device, label: &str, map: &[u32]) -> Self {
        let padding = [NO_DECODER];
        let contents = if map.is_empty() { &padding[..] } else { map };
        Self {
            buffer: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(contents),
                usage: wgpu::BufferUsages::STORAGE,
            }),
        }
    }

    /// The storage buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

/// What the divergence pass reads.
#[derive(Clone, Copy, Debug)]
pub struct DivergenceInputs<'a> {
    /// The G-buffer's material words.
    pub material_ids: &'a Target,
    /// The decoder map of the mode rendered.
    pub current: &'a DecoderMap,
    /// One decoder per texture set.
    pub baseline: &'a DecoderMap,
}

/// The divergence pass for one tile size.
#[derive(Debug)]
pub struct DivergencePass {
    tile: TileSize,
    kernel: ComputeKernel,
    /// The two histograms of `tile.pixels() + 1` `u32` bins each.
    histograms: wgpu::Buffer,
    /// The readback ring's staging buffers.
    slots: Vec<Slot>,
    /// The number of the next recorded frame.
    next_frame: u64,
}

impl DivergencePass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "divergence";

    /// Build the pipeline for `tile`.
    pub fn new(ctx: &GpuContext, tile: TileSize) -> Result<Self, KernelError> {
        let device = &ctx.device;
        let kernel = super::tiled_kernel(
            ctx,
            tile,
            &KernelDesc::new(Self::LABEL, "divergence.wgsl", "count"),
        )?;
        let histogram_bytes = Self::histogram_bytes(tile);
        let histograms = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("divergence.histograms"),
            size: histogram_bytes,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let slots = (0..STATS_RING)
            .map(|i| Slot {
                buffer: crate::gpu::readback::staging_buffer(
                    device,
                    &format!("divergence.staging {i}"),
                    histogram_bytes,
                ),
                in_flight: None,
            })
            .collect();
        Ok(Self {
            tile,
            kernel,
            histograms,
            slots,
            next_frame: 0,
        })
    }

    /// Bytes of the two histograms.
    fn histogram_bytes(tile: TileSize) -> u64 {
        2 * (u64::from(tile.pixels()) + 1) * 4
    }

    /// The tile texture for a `size` screen cut into `tile` tiles: one [`TILE_FORMAT`]
    /// texel per tile, written by the pass, read by the heatmap.
    pub fn tile_target(device: &wgpu::Device, tile: TileSize, size: (u32, u32)) -> Target {
        Target::new(
            device,
            "divergence.tiles",
            tile.grid(size),
            TILE_FORMAT,
            wgpu::TextureUsages::STORAGE_BINDING,
        )
    }

    /// Record the count of `inputs` into `tiles` (from [`Self::tile_target`] for this
    /// pass's tile size and the G-buffer's size) and the copy of the histograms into a
    /// free staging buffer.
    pub fn record(
        &mut self,
        frame: &mut FrameEncoder<'_>,
        inputs: &DivergenceInputs<'_>,
        tiles: &Target,
    ) {
        let resources = &[
            (
                0,
                wgpu::BindingResource::TextureView(&inputs.material_ids.view),
            ),
            (1, inputs.current.buffer.as_entire_binding()),
            (2, inputs.baseline.buffer.as_entire_binding()),
            (3, wgpu::BindingResource::TextureView(&tiles.view)),
            (4, self.histograms.as_entire_binding()),
        ];
        frame.encoder().clear_buffer(&self.histograms, 0, None);
        self.kernel.run(frame, resources, tiles.size());
        let encoder = frame.encoder();
        let frame = self.next_frame;
        self.next_frame += 1;
        let Some(slot) = self.slots.iter_mut().find(|s| s.in_flight.is_none()) else {
            log::debug!("divergence: every staging buffer in flight; frame {frame} dropped");
            return;
        };
        encoder.copy_buffer_to_buffer(&self.histograms, 0, &slot.buffer, 0, None);
        let (sender, receiver) = mpsc::channel();
        encoder.map_buffer_on_submit(&slot.buffer, wgpu::MapMode::Read, .., move |result| {
            // The receiver is gone only when the pass is: nothing is left to tell.
            let _ = sender.send(result);
        });
        slot.in_flight = Some((frame, receiver));
    }

    /// Non-blocking: polls the device once and returns the statistics of the newest frame
    /// whose readback has finished since the last call, if any.
    pub fn try_stats(&mut self, device: &wgpu::Device) -> Option<DivergenceStats> {
        if let Err(e) = device.poll(wgpu::PollType::Poll) {
            log::warn!("divergence: device poll failed: {e}");
        }
        self.take_ready(None).ok().flatten()
    }

    /// Blocking: after the encoder holding [`Self::record`] was submitted, waits for the
    /// GPU and returns the newest frame's statistics. An error when nothing was recorded
    /// and submitted since the last read, or the readback failed.
    pub fn stats_blocking(&mut self, ctx: &GpuContext) -> Result<DivergenceStats, GpuError> {
        self.take_ready(Some(ctx))?.ok_or_else(|| {
            GpuError::Readback(
                "no divergence statistics to read: record the divergence pass and submit \
                 its encoder first"
                    .to_owned(),
            )
        })
    }

    /// Blocking: the per-tile counts in `tiles` (a tile texture this pass wrote, after
    /// its frame was submitted), tiles in row-major order (as
    /// [`crate::screen::divergence::count_tiles`] returns them).
    pub fn read_tiles(ctx: &GpuContext, tiles: &Target) -> Result<Vec<TileCounts>, GpuError> {
        let texels = read_texture(ctx, &tiles.texture, 0, 0)?.to_u32()?;
        Ok(texels
            .chunks_exact(4)
            .map(|t| TileCounts {
                materials: t[0],
                decoders: t[1],
                baseline_decoders: t[2],
                pixels: t[3],
            })
            .collect())
    }

    /// Reads every mapped staging buffer, frees it, and returns the newest frame's stats;
    /// with `wait`, first waits for that device to go idle and for each slot's map
    /// callback ([`crate::gpu::readback::receive_mapped`]).
    fn take_ready(
        &mut self,
        wait: Option<&GpuContext>,
    ) -> Result<Option<DivergenceStats>, GpuError> {
        let tile = self.tile;
        let mut newest: Option<(u64, DivergenceStats)> = None;
        for slot in &mut self.slots {
            let Some((frame, result)) = &slot.in_flight else {
                continue;
            };
            let frame = *frame;
            // The map callback sends once it has run; it is dropped unsent (disconnecting
            // the channel) when its encoder is dropped without being submitted.
            match crate::gpu::readback::receive_mapped(result, wait)? {
                Err(TryRecvError::Empty) => continue,
                Err(TryRecvError::Disconnected) => {
                    log::debug!("divergence: frame {frame} was never submitted");
                }
                Ok(Err(e)) => {
                    log::warn!("divergence: mapping frame {frame}'s statistics failed: {e}");
                }
                Ok(Ok(())) => {
                    let stats = read_histograms(&slot.buffer, tile);
                    slot.buffer.unmap();
                    if let Some(stats) = stats
                        && newest.as_ref().is_none_or(|(f, _)| frame > *f)
                    {
                        newest = Some((frame, stats));
                    }
                }
            }
            slot.in_flight = None;
        }
        Ok(newest.map(|(_, stats)| stats))
    }
}

/// The statistics in a mapped staging buffer: the current and the baseline histogram.
fn read_histograms(buffer: &wgpu::Buffer, tile: TileSize) -> Option<DivergenceStats> {
    let view = buffer
        .slice(..)
        .get_mapped_range()
        .map_err(|e| log::warn!("divergence: reading mapped statistics failed: {e}"))
        .ok()?;
    let bins: Vec<u32> = bytemuck::pod_collect_to_vec(&view[..]);
    let (current, baseline) = bins.split_at(bins.len() / 2);
    Some(DivergenceStats::from_histograms(
        tile,
        current.to_vec(),
        baseline.to_vec(),
    ))
}
