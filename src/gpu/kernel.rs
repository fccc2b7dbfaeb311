//! [`ComputeKernel`]: one compute pipeline of an embedded shader, built from a compact
//! description — the shader and its defines, the entry point, and per bind group the
//! layout the shader declares, a list of [`Slot`]s, or a layout shared with other
//! kernels — with wgpu's validation caught
//! in an error scope and a panic of the shader compiler turned into an error (the
//! decode pass falls back to another kernel on it; the process never goes down).
//!
//! Every compute pass of the renderer and every kernel of the NTC trainer is built here,
//! so pipeline creation, layouts and error reporting are written once; [`workgroups`] is
//! the grid of square workgroups that covers an image.

use super::Defines;
use super::shader::{ShaderError, ShaderLibrary, catch_compiler_panic};
use super::{BuiltKernel, CachedBindGroup, GpuContext};
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout::{Slot, group_layout, slots_layout};

/// One bind group of a kernel.
#[derive(Clone, Copy, Debug)]
pub enum Group<'a> {
    /// The layout the shader declares for this group: each binding's [`Slot`] read from
    /// its WGSL type ([`crate::gpu::layout::declared_slots`]), every binding of the
    /// module, so the WGSL is the one place that lists them.
    Declared,
    /// A layout made from these slots (slot `i` at binding `i`).
    Slots(&'a [Slot]),
    /// A layout made elsewhere and shared (bind groups made for it bind to every kernel
    /// that shares it).
    Layout(&'a wgpu::BindGroupLayout),
}

/// The (x, y) workgroups of `side` × `side` invocations that cover `size`, one invocation
/// a pixel (the last column and row of groups may reach past it).
pub fn workgroups(size: (u32, u32), side: u32) -> (u32, u32) {
    (size.0.div_ceil(side), size.1.div_ceil(side))
}

/// What a [`ComputeKernel`] is made of.
#[derive(Clone, Copy, Debug)]
pub struct KernelDesc<'a> {
    /// Names the pipeline, its layouts and bind groups (the pass label).
    pub label: &'a str,
    /// The entry shader, relative to `shaders/`.
    pub shader: &'a str,
    /// Its defines.
    pub defines: &'a Defines,
    /// The `@compute` entry point.
    pub entry: &'a str,
    /// Bind groups 0, 1, … in order.
    pub groups: &'a [Group<'a>],
}

/// No defines, for kernels without any.
static NO_DEFINES: Defines = Defines::new();

impl<'a> KernelDesc<'a> {
    /// `shader`'s `entry`, labelled `label`, without defines, over one bind group laid
    /// out as the shader declares it.
    pub fn new(label: &'a str, shader: &'a str, entry: &'a str) -> Self {
        Self {
            label,
            shader,
            defines: &NO_DEFINES,
            entry,
            groups: &[Group::Declared],
        }
    }

    /// The same kernel with `defines`.
    pub fn with_defines(self, defines: &'a Defines) -> Self {
        Self { defines, ..self }
    }
}

/// Why a kernel could not be built.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The shader failed to compose, validate or become a module.
    #[error(transparent)]
    Shader(#[from] ShaderError),
    /// A binding of a [`Group::Declared`] group has a type no [`Slot`] describes.
    #[error("shaders/{shader} (defines [{defines}]): {reason}")]
    Binding {
        /// The entry shader.
        shader: String,
        /// Its defines.
        defines: Defines,
        /// Which binding, and its type.
        reason: String,
    },
    /// The shader compiler panicked while building the pipeline (a wgpu/naga bug);
    /// `message` is the panic message.
    #[error(
        "the shader compiler panicked building `{}` (shaders/{}, entry `{}`, defines [{}]): {}",
        .0.label, .0.shader, .0.entry, .0.defines, .0.message
    )]
    CompilerPanic(Box<PipelineFailure>),
    /// wgpu rejected the pipeline; `message` is wgpu's.
    #[error(
        "creating the `{}` pipeline (shaders/{}, entry `{}`): {}",
        .0.label, .0.shader, .0.entry, .0.message
    )]
    Pipeline(Box<PipelineFailure>),
}

/// Which pipeline failed to build, and why.
#[derive(Debug)]
pub struct PipelineFailure {
    /// The kernel's label.
    pub label: String,
    /// The entry shader.
    pub shader: String,
    /// The entry point.
    pub entry: String,
    /// The defines.
    pub defines: Defines,
    /// The panic or wgpu's message.
    pub message: String,
}

/// A compute pipeline with its bind-group layouts. See the module docs.
#[derive(Debug)]
pub struct ComputeKernel {
    label: String,
    shader: String,
    defines: Defines,
    module: wgpu::ShaderModule,
    layouts: Vec<wgpu::BindGroupLayout>,
    pipeline_layout: wgpu::PipelineLayout,
    pipeline: wgpu::ComputePipeline,
    /// Group 0 of the resources [`Self::run`] was last handed.
    group0: CachedBindGroup,
}

impl ComputeKernel {
    /// Compose, validate and compile `desc.shader` and build the pipeline of `desc.entry`.
    pub fn new(ctx: &GpuContext, desc: &KernelDesc<'_>) -> Result<Self, KernelError> {
        let shader = ShaderLibrary::embedded().compile(ctx, desc.shader, desc.defines)?;
        let compute = wgpu::ShaderStages::COMPUTE;
        let layouts = (0..)
            .zip(desc.groups)
            .map(|(index, group)| match group {
                Group::Declared => shader
                    .declared_slots(index, &[])
                    .map(|slots| slots_layout(&ctx.device, desc.label, slots, compute))
                    .map_err(|reason| KernelError::Binding {
                        shader: desc.shader.to_owned(),
                        defines: desc.defines.clone(),
                        reason,
                    }),
                Group::Slots(slots) => Ok(group_layout(&ctx.device, desc.label, slots)),
                Group::Layout(layout) => Ok((*layout).clone()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let module = shader.module;
        let layout_refs: Vec<Option<&wgpu::BindGroupLayout>> = layouts.iter().map(Some).collect();
        let pipeline_layout = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(desc.label),
                bind_group_layouts: &layout_refs,
                immediate_size: 0,
            });
        let pipeline = Self::build_pipeline(
            ctx,
            desc.label,
            desc.shader,
            desc.defines,
            &module,
            &pipeline_layout,
            desc.entry,
        )?;
        Ok(Self {
            label: desc.label.to_owned(),
            shader: desc.shader.to_owned(),
            defines: desc.defines.clone(),
            module,
            layouts,
            pipeline_layout,
            pipeline,
            group0: CachedBindGroup::new(),
        })
    }

    /// Another entry point of the same shader module with the same layouts, labelled
    /// `label` (bind groups of one bind to the other).
    pub fn sibling(&self, ctx: &GpuContext, label: &str, entry: &str) -> Result<Self, KernelError> {
        let pipeline = Self::build_pipeline(
            ctx,
            label,
            &self.shader,
            &self.defines,
            &self.module,
            &self.pipeline_layout,
            entry,
        )?;
        Ok(Self {
            label: label.to_owned(),
            shader: self.shader.clone(),
            defines: self.defines.clone(),
            module: self.module.clone(),
            layouts: self.layouts.clone(),
            pipeline_layout: self.pipeline_layout.clone(),
            pipeline,
            group0: CachedBindGroup::new(),
        })
    }

    /// The pipeline of `entry`, with wgpu's validation in an error scope and compiler
    /// panics caught (wgpu's Vulkan backend compiles the module here).
    fn build_pipeline(
        ctx: &GpuContext,
        label: &str,
        shader: &str,
        defines: &Defines,
        module: &wgpu::ShaderModule,
        layout: &wgpu::PipelineLayout,
        entry: &str,
    ) -> Result<wgpu::ComputePipeline, KernelError> {
        let failure = |message: String| {
            Box::new(PipelineFailure {
                label: label.to_owned(),
                shader: shader.to_owned(),
                entry: entry.to_owned(),
                defines: defines.clone(),
                message,
            })
        };
        let created = catch_compiler_panic(|| {
            ctx.error_scope(|| {
                ctx.device
                    .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(label),
                        layout: Some(layout),
                        module,
                        entry_point: Some(entry),
                        compilation_options: Default::default(),
                        cache: None,
                    })
            })
        })
        .map_err(|message| KernelError::CompilerPanic(failure(message)))?;
        let pipeline = created.map_err(|e| KernelError::Pipeline(failure(e.to_string())))?;
        ctx.record_kernel(BuiltKernel {
            label: label.to_owned(),
            shader: shader.to_owned(),
            defines: defines.clone(),
            entry: entry.to_owned(),
        });
        Ok(pipeline)
    }

    /// The label of the pipeline and its bind groups.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The layout of bind group `group`.
    ///
    /// # Panics
    ///
    /// When the kernel has no such group (a programming error: the groups are fixed by
    /// the description).
    pub fn layout(&self, group: usize) -> &wgpu::BindGroupLayout {
        &self.layouts[group]
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &wgpu::ComputePipeline {
        &self.pipeline
    }

    /// Record one compute pass labelled with the kernel (its timing row) that binds
    /// `bind_groups` as groups 0, 1, … and dispatches `workgroups` (x, y) workgroups.
    pub fn dispatch(
        &self,
        frame: &mut FrameEncoder<'_>,
        bind_groups: &[&wgpu::BindGroup],
        workgroups: (u32, u32),
    ) {
        frame.compute_pass(&self.label, |pass| {
            pass.set_pipeline(&self.pipeline);
            for (i, bind_group) in bind_groups.iter().enumerate() {
                pass.set_bind_group(i as u32, *bind_group, &[]);
            }
            pass.dispatch_workgroups(workgroups.0, workgroups.1, 1);
        });
    }

    /// Record one compute pass labelled with the kernel (its timing row) that binds group 0
    /// over `resources` (`(binding, resource)` pairs; the bind group is cached and remade
    /// only when they change) and dispatches `workgroups` (x, y) workgroups.
    pub fn run(
        &self,
        frame: &mut FrameEncoder<'_>,
        resources: &[(u32, wgpu::BindingResource<'_>)],
        workgroups: (u32, u32),
    ) {
        let bind_group = self
            .group0
            .get(frame.device(), &self.label, self.layout(0), resources);
        self.dispatch(frame, &[&bind_group], workgroups);
    }

    /// A bind group of `group` over `(binding, resource)` pairs, labelled with the kernel.
    pub fn bind_group(
        &self,
        device: &wgpu::Device,
        group: usize,
        resources: &[(u32, wgpu::BindingResource<'_>)],
    ) -> wgpu::BindGroup {
        crate::gpu::layout::bind_group(device, &self.label, self.layout(group), resources)
    }
}
