//! How a group lies in GPU memory: the bindings of group 0, the host mirrors of the
//! uniform and mip-table structs, the mip table with its parameter and target offsets
//! ([`GroupLayout`]), and the buffers with their bind group ([`DeviceObjects`]).

use std::num::NonZeroU64;

use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt as _;

use super::kernels::{EVAL_WORKGROUPS, Kernels, MAX_TRAIN_WORKGROUPS};
use super::{CHUNK_STEPS, GpuTrainError, TAPS_PER_SAMPLE, TrainKernel};
use crate::gpu::GpuContext;
use crate::gpu::layout::{Slot, group_layout};
use crate::ntc::model::{GridPairGpu, GroupModel, LatentLayout, OUTPUTS, lod_input};
use crate::ntc::train::checkpoint::AdamMoments;
use crate::ntc::train::cpu::AdamState;
use crate::ntc::train::schedule::Schedule;
use crate::ntc::train::{TrainConfig, TrainError};
use crate::texture::{CHANNELS, ChannelMask, TextureSet};

/// `FLAG_QAT` of `ntc_train.wgsl`: add QAT noise to the latents.
pub(super) const FLAG_QAT: u32 = 1;

/// `FLAG_LATENT_GRADIENTS` of `ntc_train.wgsl`: scatter latent gradients.
pub(super) const FLAG_LATENT_GRADIENTS: u32 = 2;

/// `FLAG_GIVEN_BATCH` of `ntc_train.wgsl`: `train_step` reads the batch buffer.
pub(super) const FLAG_GIVEN_BATCH: u32 = 4;

/// `LIST_ENTRY` of `adam.wgsl`: words of an entry of lazy latent Adam's step lists (the
/// texel, and the step it was current at when listed).
pub(super) const LIST_ENTRY_WORDS: usize = 2;

/// Binding numbers of group 0 (`shaders/common/ntc_train.wgsl`).
pub(super) mod binding {
    pub const STEP: u32 = 0;
    pub const MIPS: u32 = 1;
    pub const TARGETS: u32 = 2;
    pub const PARAMS: u32 = 3;
    pub const GRADS: u32 = 4;
    pub const MOMENTS: u32 = 5;
    pub const BATCH: u32 = 6;
    pub const PARTIALS: u32 = 7;
    pub const LOSSES: u32 = 8;
    pub const WEIGHTS16: u32 = 9;
    pub const DW_PARTIALS: u32 = 10;
    pub const LATENT_STEPS: u32 = 11;
    pub const LATENT_RATES: u32 = 12;
}

/// The bindings of group 0 in binding order ([`binding`]): the step parameters at a
/// dynamic offset, the read-only mip table and targets, then the read-write buffers
/// (9 and 10 used by the mixed-precision trainer only), then lazy latent Adam's texel
/// steps and (read-only) rates.
const GROUP_SLOTS: [Slot; 13] = [
    Slot::DynamicUniform,
    Slot::Storage,
    Slot::Storage,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::Storage,
];

/// Per-step parameters, one [`GpuTrainer::step_stride`]-aligned slot per step of a chunk.
/// Mirrors `StepParams` of `shaders/common/ntc_train.wgsl` (field docs there).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub(super) struct StepParams {
    pub(super) step: u32,
    pub(super) batch_size: u32,
    pub(super) flags: u32,
    pub(super) noise_seed: u32,
    pub(super) sample_seed: u32,
    pub(super) entry_count: u32,
    pub(super) total_texels: u32,
    pub(super) loss_slot: u32,
    pub(super) loss_groups: u32,
    pub(super) decoder_count: u32,
    pub(super) update_count: u32,
    pub(super) eval_entry: u32,
    pub(super) inv_batch: f32,
    pub(super) quant_step: f32,
    pub(super) beta1: f32,
    pub(super) beta2: f32,
    pub(super) one_minus_beta1: f32,
    pub(super) one_minus_beta2: f32,
    pub(super) epsilon: f32,
    pub(super) lr_decoder: f32,
    pub(super) bc1_decoder: f32,
    pub(super) bc2_decoder: f32,
    pub(super) lr_latents: f32,
    pub(super) bc1_latents: f32,
    pub(super) bc2_latents: f32,
    pub(super) train_chunks: u32,
    pub(super) partial_count: u32,
    pub(super) sample_tile: u32,
}

/// One colour mip of one material. Mirrors `MipEntry` of `shaders/common/ntc_train.wgsl`
/// (field docs there).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub(super) struct MipEntry {
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) texel_start: u32,
    pub(super) material: u32,
    pub(super) latent_base: u32,
    pub(super) grids: GridPairGpu,
    pub(super) lod: f32,
    pub(super) loss_weights: [f32; OUTPUTS],
}

/// The buffers of one trainer (bindings in the module docs).
pub(super) struct Buffers {
    pub(super) step: wgpu::Buffer,
    pub(super) mips: wgpu::Buffer,
    pub(super) targets: wgpu::Buffer,
    pub(super) params: wgpu::Buffer,
    pub(super) grads: wgpu::Buffer,
    pub(super) moments: wgpu::Buffer,
    pub(super) batch: wgpu::Buffer,
    pub(super) partials: wgpu::Buffer,
    pub(super) losses: wgpu::Buffer,
    pub(super) weights16: wgpu::Buffer,
    pub(super) dw_partials: wgpu::Buffer,
    /// Lazy latent Adam: the step each latent texel is current at (4 bytes otherwise).
    pub(super) latent_steps: wgpu::Buffer,
    /// Lazy latent Adam: the latents' rates of every main step (16 bytes otherwise).
    pub(super) latent_rates: wgpu::Buffer,
}

/// A texture-set error.
pub(super) fn bad_set(set: &TextureSet, reason: String) -> TrainError {
    TrainError::BadSet {
        name: set.name.clone(),
        reason,
    }
}

/// Check that `set` has the mips `layout` describes.
pub(super) fn check_set(set: &TextureSet, layout: &LatentLayout) -> Result<(), TrainError> {
    if (set.width, set.height) != (layout.width(), layout.height()) {
        return Err(bad_set(
            set,
            format!(
                "{}×{} but its latents describe {}×{}",
                set.width,
                set.height,
                layout.width(),
                layout.height()
            ),
        ));
    }
    if set.mips.len() != layout.mips() {
        return Err(bad_set(
            set,
            format!(
                "{} mips, its latents describe {}",
                set.mips.len(),
                layout.mips()
            ),
        ));
    }
    for (m, mip) in set.mips.iter().enumerate() {
        let expected = layout.mip_size(m);
        if expected != Some((mip.width, mip.height)) {
            return Err(bad_set(
                set,
                format!(
                    "mip {m} is {}×{}, expected {expected:?}",
                    mip.width, mip.height
                ),
            ));
        }
        if mip.texels.len() != mip.width as usize * mip.height as usize * CHANNELS {
            return Err(bad_set(
                set,
                format!(
                    "mip {m} holds {} bytes, expected {}",
                    mip.texels.len(),
                    mip.width as usize * mip.height as usize * CHANNELS
                ),
            ));
        }
    }
    Ok(())
}

/// `value` as u32, or a [`GpuTrainError::Limit`] naming `what`.
pub(super) fn fits_u32(what: &'static str, value: usize) -> Result<u32, GpuTrainError> {
    u32::try_from(value).map_err(|_| GpuTrainError::Limit {
        what,
        needed: value as u64,
        limit: u64::from(u32::MAX),
    })
}

/// `values` rounded to f16 (round to nearest even), as `weights16` holds them.
pub(super) fn halves(values: &[f32]) -> Vec<half::f16> {
    values.iter().map(|&v| half::f16::from_f32(v)).collect()
}

/// A bind-group entry for all of `buffer`.
pub(super) fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}

/// `(m, v)` pairs of an Adam state, as the GPU stores them.
pub(super) fn interleave(state: &AdamState) -> Vec<f32> {
    state
        .m
        .iter()
        .zip(&state.v)
        .flat_map(|(&m, &v)| [m, v])
        .collect()
}

/// The bind-group layout of group 0 ([`GROUP_SLOTS`]), which every kernel shares.
pub(super) fn bind_group_layout(ctx: &GpuContext) -> wgpu::BindGroupLayout {
    group_layout(&ctx.device, Kernels::LABEL, &GROUP_SLOTS)
}

/// The group as the kernels address it: one [`MipEntry`] per (material, mip), the
/// decoder's parameters then each material's latents in one parameter block, and every
/// target texel in one array. Fixed for the run.
pub(super) struct GroupLayout {
    /// Each material's latent layout, in group order.
    pub(super) layouts: Vec<LatentLayout>,
    /// Each material's name and channels.
    pub(super) materials: Vec<(String, ChannelMask)>,
    /// Host copy of the mip table.
    pub(super) entries: Vec<MipEntry>,
    /// First entry of each material.
    pub(super) material_entries: Vec<usize>,
    /// Decoder parameters (the first of the parameter block).
    pub(super) decoder_count: u32,
    /// All parameters: the decoder's, then every material's latents.
    pub(super) param_count: u32,
    /// Target texels of all mips of all materials.
    pub(super) total_texels: u32,
    /// Expected sum of a sample's loss weights under the sampling distribution.
    pub(super) loss_weight: f64,
}

impl GroupLayout {
    /// Latent texels of `features` values each (lazy latent Adam's unit).
    pub(super) fn latent_texels(&self, features: u32) -> u32 {
        (self.param_count - self.decoder_count) / features.max(1)
    }
}

/// The initial contents of the group's buffers, in [`GroupLayout`] order.
pub(super) struct HostData {
    /// Target texels, 12 bytes each.
    targets: Vec<u8>,
    /// The parameter block.
    params: Vec<f32>,
    /// Adam's `(m, v)` per parameter.
    moments: Vec<f32>,
}

impl GroupLayout {
    /// The layout of `sets` trained as `model` with moments `adam`, and the data to
    /// upload; an error when a set does not have the mips its latents describe or a
    /// count does not fit the kernels' u32 indices.
    pub(super) fn new(
        sets: &[TextureSet],
        model: &GroupModel,
        adam: &AdamMoments,
        config: &TrainConfig,
    ) -> Result<(Self, HostData), GpuTrainError> {
        let decoder_count = fits_u32("decoder parameters", model.decoder().params().len())?;
        let weights = config.loss_weights;
        let mut entries = Vec::new();
        let mut material_entries = Vec::with_capacity(sets.len());
        let mut targets: Vec<u8> = Vec::new();
        let mut params: Vec<f32> = model.decoder().params().to_vec();
        let mut moments: Vec<f32> = interleave(&adam.decoder);
        let mut weighted = 0.0f64;
        for (m, ((set, pyramid), state)) in sets
            .iter()
            .zip(model.pyramids())
            .zip(&adam.latents)
            .enumerate()
        {
            let layout = pyramid.layout();
            check_set(set, layout)?;
            material_entries.push(entries.len());
            let latent_base = fits_u32("parameters", params.len())?;
            let loss_weights = weights.per_output(set.present).map(|w| w as f32);
            let weight_sum: f64 = weights.per_output(set.present).iter().sum();
            for (mip, level) in set.mips.iter().enumerate() {
                let grids = layout
                    .gpu_pair(mip, |values| fits_u32("latent values", values))?
                    .ok_or_else(|| bad_set(set, format!("mip {mip} has no grid pair")))?;
                let texel_start = fits_u32("texels", targets.len() / CHANNELS)?;
                entries.push(MipEntry {
                    width: level.width,
                    height: level.height,
                    texel_start,
                    material: m as u32,
                    latent_base,
                    grids,
                    lod: lod_input(mip, layout.mips()) as f32,
                    loss_weights,
                });
                weighted += weight_sum * (level.width as f64 * level.height as f64);
                targets.extend_from_slice(&level.texels);
            }
            params.extend_from_slice(pyramid.values());
            moments.extend(interleave(state));
        }
        let texel_count = targets.len() / CHANNELS;
        // Target words are addressed as 3 · texel in u32.
        fits_u32("target words", texel_count * 3)?;
        let layout = GroupLayout {
            layouts: model
                .pyramids()
                .iter()
                .map(|p| p.layout().clone())
                .collect(),
            materials: sets.iter().map(|s| (s.name.clone(), s.present)).collect(),
            entries,
            material_entries,
            decoder_count,
            param_count: fits_u32("parameters", params.len())?,
            total_texels: fits_u32("texels", texel_count)?,
            loss_weight: weighted / texel_count.max(1) as f64,
        };
        Ok((
            layout,
            HostData {
                targets,
                params,
                moments,
            },
        ))
    }
}

/// The initial state of lazy latent Adam's buffers.
struct LazyLatents {
    /// `latent_steps` (`shaders/ntc/adam.wgsl`): per latent texel, the step it is current
    /// at (the run's start, or the end of its main phase when it starts later: the latents
    /// do not change while fine-tuning) shifted left by one, none listed; then the two
    /// lists' lengths (0) and the two lists of [`TAPS_PER_SAMPLE`] entries
    /// ([`LIST_ENTRY_WORDS`] each) per sample of the batch.
    steps: Vec<u32>,
    /// Main steps of the run (entries of the rate table).
    main_steps: u64,
}

impl LazyLatents {
    /// Every latent texel of `model` (laid out as `layout`) current at `step` of `schedule`,
    /// with lists for batches of `batch_capacity` samples; an error when a pyramid's values
    /// are not whole texels of the model's features.
    fn new(
        model: &GroupModel,
        layout: &GroupLayout,
        schedule: &Schedule,
        step: u64,
        batch_capacity: u32,
    ) -> Result<Self, GpuTrainError> {
        let features = model.config().features as usize;
        for pyramid in model.pyramids() {
            let l = pyramid.layout();
            if l.value_count() != l.texel_count() * features {
                return Err(TrainError::Setting {
                    name: "latent_adam",
                    reason: format!(
                        "lazy latent Adam needs {features} values per grid texel, a pyramid \
                         has {} values in {} texels",
                        l.value_count(),
                        l.texel_count()
                    ),
                }
                .into());
            }
        }
        let texels = layout.latent_texels(features as u32) as usize;
        // A texel's state is its step << 1 (the low bit marks it listed).
        fits_u32("main steps (twice)", 2 * schedule.main_steps as usize)?;
        let current = (step.min(schedule.main_steps) as u32) << 1;
        let lists = 2 + 2 * LIST_ENTRY_WORDS * TAPS_PER_SAMPLE as usize * batch_capacity as usize;
        let mut steps = vec![current; texels];
        steps.resize(texels + lists, 0);
        Ok(LazyLatents {
            steps,
            main_steps: schedule.main_steps,
        })
    }
}

/// The trainer's device objects: the kernels, the buffers of group 0 with their bind
/// group, and the sizes they were made for. Fixed after creation.
pub(super) struct DeviceObjects {
    pub(super) kernels: Kernels,
    pub(super) buffers: Buffers,
    pub(super) bind_group: wgpu::BindGroup,
    /// Bytes between two steps' [`StepParams`] in the step uniform.
    pub(super) step_stride: u64,
    /// Samples per training batch (the batch buffer's length).
    pub(super) batch_capacity: u32,
    /// The adapter's most workgroups per dispatch dimension.
    pub(super) max_dispatch: u32,
}

impl DeviceObjects {
    /// Buffers for `layout` filled from `host` (and the f16 copy of `model`'s decoder
    /// for the mixed-precision trainer), sized for batches of `batch_capacity` and the
    /// steps of `schedule`, every latent texel current at `step` for lazy latent Adam; an
    /// error when one exceeds the adapter's binding size.
    #[expect(
        clippy::too_many_arguments,
        reason = "the kernels, the group's layout, data and model, and the run's batch, \
                  schedule and starting step, as GpuTrainer::new has them"
    )]
    pub(super) fn new(
        ctx: &GpuContext,
        kernels: Kernels,
        layout: &GroupLayout,
        host: &HostData,
        model: &GroupModel,
        batch_capacity: u32,
        schedule: &Schedule,
        step: u64,
    ) -> Result<Self, GpuTrainError> {
        let total_steps = schedule.total_steps();
        let limits = ctx.device.limits();
        let GroupLayout {
            decoder_count,
            param_count,
            ..
        } = *layout;
        // Mixed-precision trainer: one slice of decoder gradients per train_step
        // workgroup, at most as many as chunks (chunk_plan never makes more).
        let partial_slots = kernels.rows().map_or(0, |rows| {
            batch_capacity.div_ceil(rows).clamp(1, MAX_TRAIN_WORKGROUPS)
        });
        let partial_count = u64::from(batch_capacity.div_ceil(kernels.workgroup))
            .max(u64::from(EVAL_WORKGROUPS) * CHANNELS as u64);
        let loss_slots = total_steps.saturating_add(1);
        // Lazy latent Adam: a state per latent texel and the step lists, one rate entry per
        // main step.
        let lazy = match kernels.lazy {
            Some(_) => Some(LazyLatents::new(
                model,
                layout,
                schedule,
                step,
                batch_capacity,
            )?),
            None => None,
        };
        let (steps_bytes, rates_bytes) = lazy
            .as_ref()
            .map_or((4, 16), |l| (4 * l.steps.len() as u64, 16 * l.main_steps));
        let step_stride = (std::mem::size_of::<StepParams>() as u64)
            .next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment.max(1)));
        let max_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        for (what, bytes) in [
            ("the target texels (bytes)", host.targets.len() as u64),
            ("the parameters (bytes)", 4 * u64::from(param_count)),
            ("the Adam moments (bytes)", 8 * u64::from(param_count)),
            ("the batch (bytes)", 8 * u64::from(batch_capacity)),
            ("the loss of every step (bytes)", 4 * loss_slots),
            ("the latent texels' steps (bytes)", steps_bytes),
            ("the latents' rates of every main step (bytes)", rates_bytes),
            (
                "the per-workgroup decoder gradients (bytes)",
                4 * u64::from(partial_slots) * u64::from(decoder_count),
            ),
        ] {
            if bytes > max_binding {
                return Err(GpuTrainError::Limit {
                    what,
                    needed: bytes,
                    limit: max_binding,
                });
            }
        }

        let device = &ctx.device;
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let init = |label: &str, contents: &[u8]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: storage,
            })
        };
        let zeroed = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(4),
                usage: storage,
                mapped_at_creation: false,
            })
        };
        let buffers = ctx.error_scope(|| Buffers {
            step: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("ntc.train.step"),
                size: CHUNK_STEPS * step_stride,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            mips: init("ntc.train.mips", bytemuck::cast_slice(&layout.entries)),
            targets: init("ntc.train.targets", &host.targets),
            params: init("ntc.train.params", bytemuck::cast_slice(&host.params)),
            grads: zeroed("ntc.train.grads", 4 * u64::from(param_count)),
            moments: init("ntc.train.moments", bytemuck::cast_slice(&host.moments)),
            batch: zeroed("ntc.train.batch", 8 * u64::from(batch_capacity)),
            partials: zeroed("ntc.train.partials", 4 * partial_count),
            losses: zeroed("ntc.train.losses", 4 * loss_slots),
            weights16: match kernels.kernel {
                TrainKernel::F32 => zeroed("ntc.train.weights16", 4),
                _ => init(
                    "ntc.train.weights16",
                    bytemuck::cast_slice(&halves(model.decoder().params())),
                ),
            },
            dw_partials: zeroed(
                "ntc.train.dw_partials",
                4 * u64::from(partial_slots) * u64::from(decoder_count),
            ),
            latent_steps: match &lazy {
                Some(l) => init("ntc.train.latent_steps", bytemuck::cast_slice(&l.steps)),
                None => zeroed("ntc.train.latent_steps", steps_bytes),
            },
            latent_rates: zeroed("ntc.train.latent_rates", rates_bytes),
        })?;
        let bind_group = ctx.error_scope(|| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(Kernels::LABEL),
                layout: &kernels.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: binding::STEP,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &buffers.step,
                            offset: 0,
                            size: NonZeroU64::new(std::mem::size_of::<StepParams>() as u64),
                        }),
                    },
                    entry(binding::MIPS, &buffers.mips),
                    entry(binding::TARGETS, &buffers.targets),
                    entry(binding::PARAMS, &buffers.params),
                    entry(binding::GRADS, &buffers.grads),
                    entry(binding::MOMENTS, &buffers.moments),
                    entry(binding::BATCH, &buffers.batch),
                    entry(binding::PARTIALS, &buffers.partials),
                    entry(binding::LOSSES, &buffers.losses),
                    entry(binding::WEIGHTS16, &buffers.weights16),
                    entry(binding::DW_PARTIALS, &buffers.dw_partials),
                    entry(binding::LATENT_STEPS, &buffers.latent_steps),
                    entry(binding::LATENT_RATES, &buffers.latent_rates),
                ],
            })
        })?;
        Ok(DeviceObjects {
            kernels,
            buffers,
            bind_group,
            step_stride,
            batch_capacity,
            max_dispatch: limits.max_compute_workgroups_per_dimension,
        })
    }
}
