//! Temporal pass: accumulates the noisy linear HDR radiance over frames
//! (`shaders/temporal.wgsl`, one compute dispatch) into the accumulated-radiance target
//! ([`crate::render::targets::FrameTargets::accumulated`]), which the tonemap pass reads.
//!
//! Per pixel it reprojects the history with the G-buffer motion (bilinear), rejects it off
//! screen, clips it in YCoCg to the current 3×3 neighbourhood (variance clipping) where the
//! pixel moved or shows no surface (the G-buffer leaves motion 0 where nothing was drawn,
//! so sky would pass for static while the camera turns), and blends with
//! α = 1 / min(n + 1, `max_frames`), `n` being the sample count kept in the alpha channel.
//! Where the history is rejected, or clipped by more than [`HARD_CLIP_RATIO`] box
//! half-widths, `n` restarts at 0 and the output is the current frame. A static pixel is
//! never clipped, so stochastic noise converges to the exact mean of its samples; once the
//! count reaches `max_frames` the blend becomes an exponential moving average.
//! [`TemporalReference`] is the CPU reference of the same arithmetic, used by
//! `tests/integration/temporal.rs`.
//!
//! It is screen-space only: it reads the HDR target, the G-buffer motion and depth, and
//! knows nothing of materials or how the radiance was made.
//!
//! # History
//!
//! The history is a ping-pong pair of `Rgba32Float` textures owned by the pass: each
//! dispatch reads one and writes the other, and [`TemporalPass::record`] flips which is
//! which (the only place). It stays with the pass rather than with the frame's targets
//! because it is the pass's state across frames, with its own validity, and only this
//! pass reads it. The same dispatch also writes the `Rgba16Float` output it is handed, so
//! no copy is needed.
//!
//! Why f32: a running mean stored in f16 rounds once per frame, and frame k's rounding
//! reaches frame N weighted by k/N, so after N frames it can be N/4 f16 steps off; where
//! the store truncates (lavapipe does) the error is one-sided and becomes a bias of ~N/4
//! steps (measured on lavapipe: 0.0175 after 64 frames of values in [0.25, 1.25], 18
//! steps). In f32 the mean is exact to f16 precision at any N and only the output is
//! rounded, once. The cost is 32 bytes per pixel of history instead of 8 (66 MB at
//! 1920×1080) and 16 bytes per pixel more written per frame.
//!
//! # Resets
//!
//! [`TemporalSettings::reset`] ignores the history for one frame (camera cuts, mode
//! switches, lighting or scene edits: anything that changes the image without motion,
//! which a static pixel would otherwise fade in over `max_frames` frames). New targets
//! ([`TemporalPass::new`], [`TemporalPass::resize`]) and [`TemporalPass::reset`] drop the
//! history until the next recorded frame; [`TemporalPass::has_history`] is the one answer
//! to whether a history exists (the renderer asks it to decide a restart). Accumulation
//! disabled writes the current frame with a count of 1 and still keeps the history, so
//! enabling it again continues from that one sample.
//!
//! The history flag and the ping-pong parity change when a frame is *recorded*; a recorded
//! encoder that is never submitted desynchronises them, so record once per submitted
//! frame (the settings also go through `queue.write_buffer`, which needs that anyway).

use bytemuck::{Pod, Zeroable};
use glam::{Vec2, Vec3, Vec4};

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, KernelError, workgroups};
use crate::gpu::{CachedBindGroup, GpuContext};
use crate::render::targets::Target;

/// Side of the compute workgroup in pixels (`@workgroup_size(8, 8)` in the shader).
pub const WORKGROUP_SIZE: u32 = 8;

/// Largest accepted `max_frames`: the output keeps the sample count in an f16 channel,
/// exact up to 2048 (34 s at 60 frames per second).
pub const MAX_FRAMES_LIMIT: u32 = 2048;

/// Format of the history pair (see the module docs for why f32).
pub const HISTORY_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba32Float;

/// Motion (pixels) above which a pixel's history is clipped. Small enough that any real
/// camera movement counts; a static camera gives exactly zero motion.
pub const MOTION_THRESHOLD_PX: f32 = 0.01;

/// Half-width of the clip box in standard deviations of the 3×3 neighbourhood (1 is
/// Salvi's variance clipping; a little wider keeps moving noisy pixels from flickering).
pub const CLIP_GAMMA: f32 = 1.25;

/// History lying more than this many box half-widths out (per YCoCg axis) is discarded and
/// its count restarts: a disocclusion rather than noise.
pub const HARD_CLIP_RATIO: f32 = 3.0;

/// Relative floor of the box half-width (× mean luminance, 4–8 f16 steps), so in a flat
/// neighbourhood the f16 rounding of the current frame never counts as a change.
pub const MIN_EXTENT_REL: f32 = 1.0 / 256.0;

/// Absolute floor of the box half-width (radiance units), for black neighbourhoods.
pub const MIN_EXTENT_ABS: f32 = 1e-5;

/// What one frame of accumulation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TemporalSettings {
    /// Accumulate; `false` passes the current frame through (count 1).
    pub enabled: bool,
    /// Ignore the history this frame (camera cut, resize, mode switch).
    pub reset: bool,
    /// Cap of the per-pixel sample count: α never falls below `1 / max_frames`. Clamped to
    /// `1..=`[`MAX_FRAMES_LIMIT`].
    pub max_frames: u32,
}

impl Default for TemporalSettings {
    /// Enabled, no reset, up to 64 frames.
    fn default() -> Self {
        Self {
            enabled: true,
            reset: false,
            max_frames: 64,
        }
    }
}

/// WGSL `TemporalParams` (uniform, binding 0): the settings of one dispatch and the clip
/// constants, so the shader and [`TemporalReference`] read one definition.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TemporalParams {
    /// 1: blend with the history; 0: ignore it (reset, accumulation disabled, new targets).
    pub use_history: u32,
    /// Cap of the sample count, in `[1, 2048]`.
    pub max_frames: f32,
    /// [`MOTION_THRESHOLD_PX`].
    pub motion_threshold_px: f32,
    /// [`CLIP_GAMMA`].
    pub clip_gamma: f32,
    /// [`HARD_CLIP_RATIO`].
    pub hard_clip_ratio: f32,
    /// [`MIN_EXTENT_REL`].
    pub min_extent_rel: f32,
    /// [`MIN_EXTENT_ABS`].
    pub min_extent_abs: f32,
    /// Padding, zero.
    pub _pad0: u32,
}

impl TemporalParams {
    /// The parameters for `settings`, given whether the history holds a previous frame of
    /// the current targets.
    pub fn new(settings: &TemporalSettings, history_valid: bool) -> Self {
        Self {
            use_history: u32::from(settings.enabled && !settings.reset && history_valid),
            max_frames: settings.max_frames.clamp(1, MAX_FRAMES_LIMIT) as f32,
            motion_threshold_px: MOTION_THRESHOLD_PX,
            clip_gamma: CLIP_GAMMA,
            hard_clip_ratio: HARD_CLIP_RATIO,
            min_extent_rel: MIN_EXTENT_REL,
            min_extent_abs: MIN_EXTENT_ABS,
            _pad0: 0,
        }
    }
}

/// Errors of the pass and of the CPU reference.
#[derive(Debug, thiserror::Error)]
pub enum TemporalError {
    /// An input or the output does not have the pass's size.
    #[error(
        "{label}: {input} is {}×{} but the pass is {}×{}; resize the pass with the targets",
        size.0, size.1, pass.0, pass.1, label = TemporalPass::LABEL
    )]
    SizeMismatch {
        /// Which input or output.
        input: &'static str,
        /// Its size.
        size: (u32, u32),
        /// The pass's size.
        pass: (u32, u32),
    },
    /// An input image does not hold one value per pixel.
    #[error(
        "temporal reference: `{input}` holds {actual} pixels but the frame is {width}×{height} \
         ({expected}); pass one value per pixel, row-major, top row first"
    )]
    InputLength {
        /// Which input.
        input: &'static str,
        /// Its length.
        actual: usize,
        /// `width × height`.
        expected: usize,
        /// Frame width in pixels.
        width: u32,
        /// Frame height in pixels.
        height: u32,
    },
}

/// What one frame of the temporal pass reads.
#[derive(Clone, Copy, Debug)]
pub struct TemporalInputs<'a> {
    /// This frame's linear HDR radiance.
    pub hdr: &'a Target,
    /// The G-buffer's motion ([`format::MOTION`](crate::render::targets::format::MOTION): two packed f16).
    pub motion: &'a Target,
    /// The G-buffer's depth.
    pub depth: &'a Target,
    /// Accumulation on or off, reset, frame cap.
    pub settings: &'a TemporalSettings,
}

/// The temporal accumulation pass. See the module docs.
#[derive(Debug)]
pub struct TemporalPass {
    size: (u32, u32),
    kernel: ComputeKernel,
    params: wgpu::Buffer,
    /// The history pair: each frame reads one and writes the other.
    history: [Target; 2],
    /// Index of the history that holds the last recorded frame; flipped by `record`.
    front: usize,
    /// Whether that history holds frames to continue from: cleared by `new`, `resize`
    /// and `reset`, set by `record`.
    history_valid: bool,
    /// Per front history: the bind group reading it and writing the other one.
    bind_groups: [CachedBindGroup; 2],
}

impl TemporalPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "temporal";

    /// Build the pipeline and the history for a `size` screen.
    pub fn new(ctx: &GpuContext, size: (u32, u32)) -> Result<Self, KernelError> {
        let device = &ctx.device;
        let kernel = ComputeKernel::new(
            ctx,
            &KernelDesc::new(Self::LABEL, "temporal.wgsl", "resolve"),
        )?;
        let params = crate::gpu::layout::uniform_buffer::<TemporalParams>(device, Self::LABEL);
        let size = (size.0.max(1), size.1.max(1));
        Ok(Self {
            size,
            kernel,
            params,
            history: Self::history(device, size),
            front: 0,
            history_valid: false,
            bind_groups: Default::default(),
        })
    }

    fn history(device: &wgpu::Device, size: (u32, u32)) -> [Target; 2] {
        let storage = wgpu::TextureUsages::STORAGE_BINDING;
        let history = |label| Target::new(device, label, size, HISTORY_FORMAT, storage);
        [history("temporal.history.0"), history("temporal.history.1")]
    }

    /// Reallocate the history for a new screen size; the next frame starts a new history.
    pub fn resize(&mut self, device: &wgpu::Device, size: (u32, u32)) {
        let size = (size.0.max(1), size.1.max(1));
        self.history = Self::history(device, size);
        self.size = size;
        self.history_valid = false;
    }

    /// Drop the history: the next frame starts over, as if [`TemporalSettings::reset`].
    pub fn reset(&mut self) {
        self.history_valid = false;
    }

    /// Whether the next frame has a history to continue from (a frame was recorded since
    /// the pass was made, resized or reset).
    pub fn has_history(&self) -> bool {
        self.history_valid
    }

    /// The screen size the history has.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Record the accumulation of `inputs` into `output` (an [`format::ACCUMULATED`](crate::render::targets::format::ACCUMULATED)
    /// storage target) and swap the history pair. Record once per submitted frame (see
    /// the module docs). Inputs or an output of another size than the pass are an error
    /// and record nothing (resize the pass with the targets).
    pub fn record(
        &mut self,
        frame: &mut FrameEncoder<'_>,
        inputs: &TemporalInputs<'_>,
        output: &Target,
    ) -> Result<(), TemporalError> {
        let targets = [
            ("hdr", inputs.hdr),
            ("motion", inputs.motion),
            ("depth", inputs.depth),
            ("output", output),
        ];
        if let Some((input, target)) = targets.iter().find(|(_, t)| t.size() != self.size) {
            return Err(TemporalError::SizeMismatch {
                input,
                size: target.size(),
                pass: self.size,
            });
        }
        let history_valid = std::mem::replace(&mut self.history_valid, true);
        let front = self.front;
        self.front = 1 - front;
        let (read, write) = (&self.history[front], &self.history[1 - front]);
        let view = wgpu::BindingResource::TextureView;
        let bind_group = self.bind_groups[front].get(
            frame.device(),
            Self::LABEL,
            self.kernel.layout(0),
            &[
                (0, self.params.as_entire_binding()),
                (1, view(&inputs.hdr.view)),
                (2, view(&read.view)),
                (3, view(&inputs.motion.view)),
                (4, view(&inputs.depth.view)),
                (5, view(&output.view)),
                (6, view(&write.view)),
            ],
        );
        let params = TemporalParams::new(inputs.settings, history_valid);
        frame
            .queue()
            .write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        let groups = workgroups(self.size, WORKGROUP_SIZE);
        self.kernel.dispatch(frame, &[&bind_group], groups);
        Ok(())
    }
}

/// One frame's inputs to [`TemporalReference::record`], as the pass reads them: row-major,
/// top row first, one value per pixel.
#[derive(Clone, Copy, Debug)]
pub struct ReferenceFrame<'a> {
    /// Linear HDR radiance (alpha ignored).
    pub current: &'a [[f32; 4]],
    /// Screen-UV offset to where the surface was last frame (the G-buffer's motion).
    pub motion: &'a [[f32; 2]],
    /// Reversed-Z depth; 0 where no surface was drawn.
    pub depth: &'a [f32],
}

/// CPU reference of [`TemporalPass`]: the same per-pixel arithmetic and the same history
/// rules (a new reference, like a new pass, starts without history). Inputs should hold
/// values the GPU targets can represent (f16) for the two to agree.
#[derive(Clone, Debug)]
pub struct TemporalReference {
    size: (u32, u32),
    /// The f32 history (rgb radiance, a count).
    history: Vec<[f32; 4]>,
    history_valid: bool,
}

impl TemporalReference {
    /// A reference for `size` pixels, without history.
    pub fn new(size: (u32, u32)) -> Self {
        Self {
            size,
            history: Vec::new(),
            history_valid: false,
        }
    }

    /// One frame, like [`TemporalPass::record`]: returns the output rounded to f16 as the
    /// `Rgba16Float` target stores it, and keeps the f32 accumulation as the history.
    pub fn record(
        &mut self,
        frame: &ReferenceFrame<'_>,
        settings: &TemporalSettings,
    ) -> Result<Vec<[f32; 4]>, TemporalError> {
        let (width, height) = self.size;
        let expected = width as usize * height as usize;
        let check = |input: &'static str, actual: usize| {
            if actual == expected {
                Ok(())
            } else {
                Err(TemporalError::InputLength {
                    input,
                    actual,
                    expected,
                    width,
                    height,
                })
            }
        };
        check("current", frame.current.len())?;
        check("motion", frame.motion.len())?;
        check("depth", frame.depth.len())?;
        let params = TemporalParams::new(settings, self.history_valid);
        let images = Images {
            size: (width as i32, height as i32),
            current: frame.current,
            history: &self.history,
        };
        let accumulated: Vec<Vec4> = (0..expected)
            .map(|i| {
                let p = ((i % width as usize) as i32, (i / width as usize) as i32);
                let motion = Vec2::from(frame.motion[i]);
                resolve_pixel(&images, &params, p, motion, frame.depth[i])
            })
            .collect();
        self.history = accumulated.iter().map(|v| v.to_array()).collect();
        self.history_valid = true;
        let round = |v: f32| half::f16::from_f32(v).to_f32();
        Ok(self.history.iter().map(|v| v.map(round)).collect())
    }
}

/// The images one pixel reads.
struct Images<'a> {
    size: (i32, i32),
    current: &'a [[f32; 4]],
    history: &'a [[f32; 4]],
}

impl Images<'_> {
    fn index(&self, (x, y): (i32, i32)) -> usize {
        let x = x.clamp(0, self.size.0 - 1);
        let y = y.clamp(0, self.size.1 - 1);
        (y * self.size.0 + x) as usize
    }

    fn current(&self, p: (i32, i32)) -> Vec3 {
        Vec4::from(self.current[self.index(p)]).truncate()
    }

    fn history(&self, p: (i32, i32)) -> Vec4 {
        Vec4::from(self.history[self.index(p)])
    }
}

/// WGSL `mix`.
fn mix<T>(a: T, b: T, t: f32) -> T
where
    T: std::ops::Mul<f32, Output = T> + std::ops::Add<Output = T>,
{
    a * (1.0 - t) + b * t
}

fn rgb_to_ycocg(c: Vec3) -> Vec3 {
    Vec3::new(
        0.25 * c.x + 0.5 * c.y + 0.25 * c.z,
        0.5 * c.x - 0.5 * c.z,
        -0.25 * c.x + 0.5 * c.y - 0.25 * c.z,
    )
}

fn ycocg_to_rgb(c: Vec3) -> Vec3 {
    Vec3::new(c.x + c.y - c.z, c.x + c.z, c.x - c.y - c.z)
}

/// WGSL `history_bilinear`.
fn history_bilinear(images: &Images<'_>, pos: Vec2) -> Vec4 {
    let base = pos.floor();
    let f = pos - base;
    let (x, y) = (base.x as i32, base.y as i32);
    let top = mix(images.history((x, y)), images.history((x + 1, y)), f.x);
    let bottom = mix(
        images.history((x, y + 1)),
        images.history((x + 1, y + 1)),
        f.x,
    );
    mix(top, bottom, f.y)
}

/// WGSL `clip_history`: the clipped colour and the clip ratio.
fn clip_history(
    images: &Images<'_>,
    params: &TemporalParams,
    history: Vec3,
    p: (i32, i32),
) -> (Vec3, f32) {
    let mut sum = Vec3::ZERO;
    let mut sum_sq = Vec3::ZERO;
    for dy in -1..=1 {
        for dx in -1..=1 {
            let c = rgb_to_ycocg(images.current((p.0 + dx, p.1 + dy)));
            sum += c;
            sum_sq += c * c;
        }
    }
    let mean = sum / 9.0;
    let sigma = (sum_sq / 9.0 - mean * mean).max(Vec3::ZERO).map(f32::sqrt);
    let floor_extent = params.min_extent_rel * mean.x.max(0.0) + params.min_extent_abs;
    let extent = (params.clip_gamma * sigma).max(Vec3::splat(floor_extent));
    let offset = rgb_to_ycocg(history) - mean;
    let ratio = (offset.abs() / extent).max_element();
    if ratio <= 1.0 {
        (history, ratio)
    } else {
        (ycocg_to_rgb(mean + offset / ratio), ratio)
    }
}

/// WGSL `resolve` for pixel `p`, before the f16 store.
fn resolve_pixel(
    images: &Images<'_>,
    params: &TemporalParams,
    p: (i32, i32),
    motion: Vec2,
    depth: f32,
) -> Vec4 {
    let size = Vec2::new(images.size.0 as f32, images.size.1 as f32);
    let current = images.current(p);
    let mut history = current;
    let mut count = 0.0;
    if params.use_history != 0 {
        let offset_px = motion * size;
        let pos = Vec2::new(p.0 as f32, p.1 as f32) + offset_px;
        let centre = pos + 0.5;
        if centre.cmpge(Vec2::ZERO).all() && centre.cmple(size).all() {
            let h = history_bilinear(images, pos);
            history = h.truncate();
            count = h.w;
            let surface = depth > 0.0;
            if offset_px.length() > params.motion_threshold_px || !surface {
                let (clipped, ratio) = clip_history(images, params, history, p);
                history = clipped;
                if ratio > params.hard_clip_ratio {
                    history = current;
                    count = 0.0;
                }
            }
        }
    }
    let n = (count + 1.0).min(params.max_frames);
    mix(history, current, 1.0 / n).extend(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs of one frame: radiance, motion, depth.
    type Inputs = (Vec<[f32; 4]>, Vec<[f32; 2]>, Vec<f32>);

    /// A `size` frame of constant radiance `value`, static, on a surface.
    fn flat(size: (u32, u32), value: f32) -> Inputs {
        let n = (size.0 * size.1) as usize;
        (
            vec![[value, value, value, 1.0]; n],
            vec![[0.0; 2]; n],
            vec![0.5; n],
        )
    }

    fn frame((current, motion, depth): &Inputs) -> ReferenceFrame<'_> {
        ReferenceFrame {
            current,
            motion,
            depth,
        }
    }

    #[test]
    fn params_match_the_shader_struct() {
        let module =
            crate::gpu::shader::validate("temporal.wgsl", &crate::gpu::Defines::new()).unwrap();
        let params = crate::gpu::mirror::wgsl_struct(&module, "TemporalParams")
            .expect("temporal.wgsl declares TemporalParams");
        assert_eq!(params.size as usize, std::mem::size_of::<TemporalParams>());
        let offsets: Vec<(&str, u32)> = params
            .members
            .iter()
            .map(|(name, offset)| (name.as_str(), *offset))
            .collect();
        assert_eq!(
            offsets,
            [
                ("use_history", 0),
                ("max_frames", 4),
                ("motion_threshold_px", 8),
                ("clip_gamma", 12),
                ("hard_clip_ratio", 16),
                ("min_extent_rel", 20),
                ("min_extent_abs", 24),
                ("_pad0", 28),
            ]
        );
        let entry = &module.entry_points[0];
        assert_eq!(
            entry.workgroup_size,
            [WORKGROUP_SIZE, WORKGROUP_SIZE, 1],
            "{}",
            entry.name
        );
    }

    #[test]
    fn params_follow_the_settings() {
        let on = TemporalSettings::default();
        assert_eq!(TemporalParams::new(&on, true).use_history, 1);
        assert_eq!(TemporalParams::new(&on, false).use_history, 0);
        let reset = TemporalSettings { reset: true, ..on };
        assert_eq!(TemporalParams::new(&reset, true).use_history, 0);
        let off = TemporalSettings {
            enabled: false,
            ..on
        };
        assert_eq!(TemporalParams::new(&off, true).use_history, 0);
        let capped = |max_frames| {
            TemporalParams::new(&TemporalSettings { max_frames, ..on }, true).max_frames
        };
        assert_eq!(capped(0), 1.0);
        assert_eq!(capped(17), 17.0);
        assert_eq!(capped(u32::MAX), MAX_FRAMES_LIMIT as f32);
    }

    #[test]
    fn reference_rejects_wrong_lengths() {
        let mut reference = TemporalReference::new((4, 3));
        let mut inputs = flat((4, 3), 1.0);
        inputs.2.pop();
        let err = reference
            .record(&frame(&inputs), &Default::default())
            .unwrap_err();
        assert!(
            matches!(
                err,
                TemporalError::InputLength {
                    input: "depth",
                    actual: 11,
                    expected: 12,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn reference_counts_and_averages_a_static_pixel() {
        let size = (5, 4);
        let settings = TemporalSettings {
            max_frames: 3,
            ..Default::default()
        };
        let mut reference = TemporalReference::new(size);
        // Inputs 1, 2, 3, 4: the mean of the first three, then an average capped at 1/3.
        let expected = [(1.0, 1.0), (1.5, 2.0), (2.0, 3.0), (8.0 / 3.0, 3.0)];
        for (k, (mean, count)) in expected.into_iter().enumerate() {
            let out = reference
                .record(&frame(&flat(size, k as f32 + 1.0)), &settings)
                .unwrap();
            for texel in &out {
                assert!((texel[0] - mean).abs() < 2e-3, "frame {k}: {texel:?}");
                assert_eq!(texel[3], count, "frame {k}");
            }
        }
    }

    #[test]
    fn reference_clips_only_moving_pixels() {
        let size = (6, 6);
        let mut first = flat(size, 1.0);
        first.0[2 * 6 + 3] = [40.0, 40.0, 40.0, 1.0];
        let second = flat(size, 1.0);
        let mut moving = second.clone();
        // One pixel to the right: (2, 2) now reads the outlier at (3, 2).
        moving.1.fill([1.0 / 6.0, 0.0]);
        let settings = TemporalSettings::default();
        let run = |next: &Inputs| {
            let mut reference = TemporalReference::new(size);
            reference.record(&frame(&first), &settings).unwrap();
            reference.record(&frame(next), &settings).unwrap()
        };
        // Static: the outlier is averaged in, not clipped.
        assert_eq!(run(&second)[2 * 6 + 3], [20.5, 20.5, 20.5, 2.0]);
        let moved = run(&moving);
        // Moved: the outlier is far outside the flat neighbourhood's box and discarded.
        assert_eq!(moved[2 * 6 + 2], [1.0, 1.0, 1.0, 1.0]);
        assert_eq!(moved[2 * 6 + 1], [1.0, 1.0, 1.0, 2.0]);
        // Off screen past the right edge: rejected.
        assert_eq!(moved[2 * 6 + 5][3], 1.0);
    }
}
