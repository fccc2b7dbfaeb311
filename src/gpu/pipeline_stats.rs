//! What the driver made of a compute kernel: the statistics of its compiled pipeline
//! (`VK_KHR_pipeline_executable_properties`: registers per thread, spills, instruction
//! counts, whatever the driver reports), for `neurotex bench kernels`.
//!
//! wgpu creates its pipelines without asking the driver to keep statistics, so
//! [`StatsDevice`] opens a second Vulkan device on the same physical device through
//! `ash`, with every feature the device offers (so that any kernel the wgpu device can
//! build compiles here too) and that extension. [`StatsDevice::kernel`] writes a
//! kernel's naga module to SPIR-V for its entry point with the options wgpu's Vulkan
//! backend uses on a Vulkan 1.3 device (SPIR-V 1.6, index clamping and loop bounding
//! as [`ShaderChecks`] says, workgroup memory zeroed by the driver), builds the pipeline
//! over descriptor-set layouts read from the module's bindings, and reads back each
//! executable's statistics. The SPIR-V differs from wgpu's only in what wgpu adds for
//! features this crate does not use (debug names, ray queries, mesh shaders).

use std::ffi::{CStr, CString};

use ash::vk;

use super::ShaderChecks;

/// Why statistics could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// No Vulkan loader, or no physical device named like the wgpu adapter.
    #[error("no Vulkan device `{adapter}` to read pipeline statistics on: {reason}")]
    NoDevice {
        /// The wgpu adapter's name.
        adapter: String,
        /// Why.
        reason: String,
    },
    /// The device does not report pipeline statistics.
    #[error(
        "the Vulkan device `{0}` lacks VK_KHR_pipeline_executable_properties, so its driver \
         cannot report what it compiled"
    )]
    Unsupported(String),
    /// A Vulkan call failed.
    #[error("{call} failed: {result}")]
    Vulkan {
        /// The call.
        call: &'static str,
        /// Its result.
        result: vk::Result,
    },
    /// The module could not be written to SPIR-V or laid out.
    #[error("{0}")]
    Module(String),
}

/// One statistic of an executable, as the driver names it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Statistic {
    /// The driver's name (e.g. `Register Count`).
    pub name: String,
    /// The driver's description.
    pub description: String,
    /// The value.
    pub value: StatisticValue,
}

/// A statistic's value.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum StatisticValue {
    /// A flag.
    Bool(bool),
    /// A signed count.
    Int(i64),
    /// An unsigned count.
    UInt(u64),
    /// A measure.
    Float(f64),
}

impl std::fmt::Display for StatisticValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bool(v) => write!(f, "{v}"),
            Self::Int(v) => write!(f, "{v}"),
            Self::UInt(v) => write!(f, "{v}"),
            Self::Float(v) => write!(f, "{v}"),
        }
    }
}

/// One executable of a pipeline (a compute pipeline has one on every driver seen).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Executable {
    /// The driver's name for it.
    pub name: String,
    /// Its threads per subgroup, as the driver compiled it.
    pub subgroup_size: u32,
    /// Its statistics in the driver's order.
    pub statistics: Vec<Statistic>,
}

/// A Vulkan device that keeps its pipelines' statistics.
pub struct StatsDevice {
    // Kept alive for the instance's function pointers.
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    properties: ash::khr::pipeline_executable_properties::Device,
    /// The physical device's name.
    name: String,
    /// The driver checks buffer accesses itself (`robustBufferAccess2`), as wgpu then
    /// leaves buffer indices unclamped.
    robust_buffers: bool,
}

/// Runs a Vulkan call's result into [`StatsError::Vulkan`].
fn vk_call<T>(call: &'static str, result: Result<T, vk::Result>) -> Result<T, StatsError> {
    result.map_err(|result| StatsError::Vulkan { call, result })
}

impl StatsDevice {
    /// Opens the physical device named `adapter` (the wgpu adapter's name) with every
    /// feature it offers and pipeline statistics.
    pub fn open(adapter: &str) -> Result<Self, StatsError> {
        let no_device = |reason: String| StatsError::NoDevice {
            adapter: adapter.to_owned(),
            reason,
        };
        #[expect(unsafe_code, reason = "loading the Vulkan library")]
        // SAFETY: the loader is a system library loaded once here; `Entry` keeps it.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| no_device(e.to_string()))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        #[expect(unsafe_code, reason = "raw Vulkan instance")]
        // SAFETY: the create info lives through the call; the instance is destroyed in
        // `Drop` after the device.
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }
        .map_err(|e| no_device(format!("vkCreateInstance: {e}")))?;
        match open_device(&instance, adapter) {
            Ok((device, name, robust_buffers)) => Ok(Self {
                properties: ash::khr::pipeline_executable_properties::Device::new(
                    &instance, &device,
                ),
                _entry: entry,
                instance,
                device,
                name,
                robust_buffers,
            }),
            Err(error) => {
                #[expect(unsafe_code, reason = "raw Vulkan instance")]
                // SAFETY: nothing made from the instance is alive.
                unsafe {
                    instance.destroy_instance(None)
                };
                Err(error)
            }
        }
    }

    /// The physical device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The executables and statistics of the compute pipeline of `module`'s `entry`,
    /// written with `checks`.
    pub fn kernel(
        &self,
        module: &naga::Module,
        info: &naga::valid::ModuleInfo,
        entry: &str,
        checks: ShaderChecks,
    ) -> Result<Vec<Executable>, StatsError> {
        let code = kernel_spirv(module, info, entry, checks, self.robust_buffers)?;
        let sets = descriptor_sets(module, info, entry)?;
        let immediates = immediate_bytes(module, info, entry)?;
        let mut scope = Scope::new(&self.device);
        let mut layouts = Vec::with_capacity(sets.len());
        for bindings in &sets {
            let create = vk::DescriptorSetLayoutCreateInfo::default().bindings(bindings);
            #[expect(unsafe_code, reason = "raw Vulkan objects")]
            // SAFETY: `create` lives through the call; `scope` destroys the layout.
            let layout = vk_call("vkCreateDescriptorSetLayout", unsafe {
                self.device.create_descriptor_set_layout(&create, None)
            })?;
            scope.set_layouts.push(layout);
            layouts.push(layout);
        }
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(immediates)];
        let layout_info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&layouts)
            .push_constant_ranges(if immediates > 0 { &ranges[..] } else { &[] });
        #[expect(unsafe_code, reason = "raw Vulkan objects")]
        // SAFETY: as above.
        let layout = vk_call("vkCreatePipelineLayout", unsafe {
            self.device.create_pipeline_layout(&layout_info, None)
        })?;
        scope.pipeline_layout = Some(layout);
        #[expect(unsafe_code, reason = "raw Vulkan objects")]
        // SAFETY: `code` is the SPIR-V naga wrote; `scope` destroys the module.
        let shader = vk_call("vkCreateShaderModule", unsafe {
            self.device
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None)
        })?;
        scope.module = Some(shader);
        let name = CString::new(entry).map_err(|e| StatsError::Module(e.to_string()))?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(shader)
            .name(&name);
        let create = [vk::ComputePipelineCreateInfo::default()
            .flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR)
            .stage(stage)
            .layout(layout)];
        #[expect(unsafe_code, reason = "raw Vulkan objects")]
        // SAFETY: as above; `scope` destroys the pipeline.
        let pipeline = unsafe {
            self.device
                .create_compute_pipelines(vk::PipelineCache::null(), &create, None)
        }
        .map_err(|(_, result)| StatsError::Vulkan {
            call: "vkCreateComputePipelines",
            result,
        })?[0];
        scope.pipeline = Some(pipeline);

        #[expect(unsafe_code, reason = "raw Vulkan queries")]
        // SAFETY: the pipeline was created with CAPTURE_STATISTICS on this device.
        let executables = vk_call("vkGetPipelineExecutablePropertiesKHR", unsafe {
            self.properties.get_pipeline_executable_properties(
                &vk::PipelineInfoKHR::default().pipeline(pipeline),
            )
        })?;
        let mut out = Vec::with_capacity(executables.len());
        for (index, executable) in executables.iter().enumerate() {
            let which = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipeline)
                .executable_index(index as u32);
            #[expect(unsafe_code, reason = "raw Vulkan queries")]
            // SAFETY: as above, `index` below the executables' count.
            let statistics = vk_call("vkGetPipelineExecutableStatisticsKHR", unsafe {
                self.properties.get_pipeline_executable_statistics(&which)
            })?;
            out.push(Executable {
                name: text(executable.name_as_c_str()),
                subgroup_size: executable.subgroup_size,
                statistics: statistics.iter().map(statistic).collect(),
            });
        }
        Ok(out)
    }
}

impl Drop for StatsDevice {
    fn drop(&mut self) {
        #[expect(unsafe_code, reason = "raw Vulkan objects")]
        // SAFETY: every object made from the device was destroyed by its `Scope`; the
        // device goes before the instance.
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// Opens the physical device of `instance` named `adapter` with every feature it offers
/// and pipeline statistics: the device, its name, and whether it checks buffer accesses
/// itself (`robustBufferAccess2`).
fn open_device(
    instance: &ash::Instance,
    adapter: &str,
) -> Result<(ash::Device, String, bool), StatsError> {
    #[expect(unsafe_code, reason = "raw Vulkan queries")]
    // SAFETY: the instance is valid; every query below is on its physical devices.
    let found = unsafe { instance.enumerate_physical_devices() }.map(|devices| {
        devices.into_iter().find_map(|pd| {
            #[expect(unsafe_code, reason = "raw Vulkan queries")]
            // SAFETY: `pd` comes from this instance.
            let props = unsafe { instance.get_physical_device_properties(pd) };
            let name = props
                .device_name_as_c_str()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name == adapter).then_some((pd, props, name))
        })
    });
    let (pd, props, name) = match found {
        Ok(Some(found)) => found,
        Ok(None) => {
            return Err(StatsError::NoDevice {
                adapter: adapter.to_owned(),
                reason: "no physical device has that name".into(),
            });
        }
        Err(result) => {
            return Err(StatsError::Vulkan {
                call: "vkEnumeratePhysicalDevices",
                result,
            });
        }
    };
    #[expect(unsafe_code, reason = "raw Vulkan queries")]
    // SAFETY: `pd` comes from this instance.
    let extensions = match unsafe { instance.enumerate_device_extension_properties(pd) } {
        Ok(e) => e,
        Err(result) => {
            return Err(StatsError::Vulkan {
                call: "vkEnumerateDeviceExtensionProperties",
                result,
            });
        }
    };
    let has = |ext: &CStr| {
        extensions
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(ext))
    };
    if !has(ash::khr::pipeline_executable_properties::NAME) {
        return Err(StatsError::Unsupported(name));
    }
    let optional = [
        ash::khr::cooperative_matrix::NAME,
        ash::ext::shader_atomic_float::NAME,
        ash::ext::robustness2::NAME,
    ];
    let mut enabled: Vec<*const std::ffi::c_char> =
        vec![ash::khr::pipeline_executable_properties::NAME.as_ptr()];
    enabled.extend(optional.iter().filter(|e| has(e)).map(|e| e.as_ptr()));
    if props.api_version < vk::API_VERSION_1_3 {
        return Err(StatsError::NoDevice {
            adapter: adapter.to_owned(),
            reason: "its Vulkan is older than 1.3".into(),
        });
    }

    // Every feature the device offers, read into the structures that then enable them.
    let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut stats = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
    let mut coop = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
    let mut atomic = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
    // Buffer robustness as wgpu asks for it where offered (its shaders then leave buffer
    // indices to the driver).
    let robust_buffers = has(ash::ext::robustness2::NAME) && {
        let mut robust = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
        let mut query = vk::PhysicalDeviceFeatures2::default().push_next(&mut robust);
        #[expect(unsafe_code, reason = "raw Vulkan queries")]
        // SAFETY: the chain's structure lives through the call.
        unsafe {
            instance.get_physical_device_features2(pd, &mut query)
        };
        robust.robust_buffer_access2 == vk::TRUE
    };
    let mut robust =
        vk::PhysicalDeviceRobustness2FeaturesEXT::default().robust_buffer_access2(robust_buffers);
    let mut features = vk::PhysicalDeviceFeatures2::default()
        .push_next(&mut v11)
        .push_next(&mut v12)
        .push_next(&mut v13)
        .push_next(&mut stats);
    if has(ash::khr::cooperative_matrix::NAME) {
        features = features.push_next(&mut coop);
    }
    if has(ash::ext::shader_atomic_float::NAME) {
        features = features.push_next(&mut atomic);
    }
    #[expect(unsafe_code, reason = "raw Vulkan queries")]
    // SAFETY: the chain's structures live through the call.
    unsafe {
        instance.get_physical_device_features2(pd, &mut features)
    };
    if robust_buffers {
        features = features.push_next(&mut robust);
    }
    let queue_family = {
        #[expect(unsafe_code, reason = "raw Vulkan queries")]
        // SAFETY: `pd` comes from this instance.
        let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
        match families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        {
            Some(i) => i as u32,
            None => {
                return Err(StatsError::NoDevice {
                    adapter: adapter.to_owned(),
                    reason: "it has no compute queue".into(),
                });
            }
        }
    };
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(queue_family)
        .queue_priorities(&priorities)];
    let create = vk::DeviceCreateInfo::default()
        .push_next(&mut features)
        .queue_create_infos(&queues)
        .enabled_extension_names(&enabled);
    #[expect(unsafe_code, reason = "raw Vulkan device")]
    // SAFETY: the create info and its chain live through the call; the device is
    // destroyed in `Drop` before the instance.
    let device = match unsafe { instance.create_device(pd, &create, None) } {
        Ok(d) => d,
        Err(result) => {
            return Err(StatsError::Vulkan {
                call: "vkCreateDevice",
                result,
            });
        }
    };
    Ok((device, name, robust_buffers))
}

/// The SPIR-V of `module`'s `entry` as wgpu's Vulkan backend writes it for a Vulkan 1.3
/// device with `checks` (`robust_buffers`: the driver checks buffer accesses itself,
/// `robustBufferAccess2`, so that wgpu leaves buffer indices unclamped).
pub fn kernel_spirv(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
    checks: ShaderChecks,
    robust_buffers: bool,
) -> Result<Vec<u32>, StatsError> {
    use naga::proc::BoundsCheckPolicy::{Restrict, Unchecked};
    let on = checks == ShaderChecks::On;
    let options = naga::back::spv::Options {
        lang_version: (1, 6),
        flags: naga::back::spv::WriterFlags::empty(),
        // Each binding at its group's set and its own number, as wgpu's layouts of these
        // kernels (no binding arrays) place them.
        fake_missing_bindings: true,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: if on { Restrict } else { Unchecked },
            buffer: if on && !robust_buffers {
                Restrict
            } else {
                Unchecked
            },
            image_load: if on { Restrict } else { Unchecked },
            binding_array: Unchecked,
        },
        zero_initialize_workgroup_memory:
            naga::back::spv::ZeroInitializeWorkgroupMemoryMode::Native,
        force_loop_bounding: on,
        emit_int_div_checks: on,
        ..naga::back::spv::Options::default()
    };
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: entry.to_owned(),
    };
    naga::back::spv::write_vec(module, info, &options, Some(&pipeline))
        .map_err(|e| StatsError::Module(format!("SPIR-V of `{entry}`: {e}")))
}

/// The objects of one [`StatsDevice::kernel`], destroyed when it returns.
struct Scope<'d> {
    device: &'d ash::Device,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    pipeline_layout: Option<vk::PipelineLayout>,
    module: Option<vk::ShaderModule>,
    pipeline: Option<vk::Pipeline>,
}

impl<'d> Scope<'d> {
    fn new(device: &'d ash::Device) -> Self {
        Self {
            device,
            set_layouts: Vec::new(),
            pipeline_layout: None,
            module: None,
            pipeline: None,
        }
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        #[expect(unsafe_code, reason = "raw Vulkan objects")]
        // SAFETY: the objects were made from `device` and nothing uses them any more.
        unsafe {
            if let Some(p) = self.pipeline {
                self.device.destroy_pipeline(p, None);
            }
            if let Some(m) = self.module {
                self.device.destroy_shader_module(m, None);
            }
            if let Some(l) = self.pipeline_layout {
                self.device.destroy_pipeline_layout(l, None);
            }
            for &l in &self.set_layouts {
                self.device.destroy_descriptor_set_layout(l, None);
            }
        }
    }
}

/// A driver string (lossy, empty when it has no terminator).
fn text(s: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    s.map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One statistic as [`Statistic`].
fn statistic(s: &vk::PipelineExecutableStatisticKHR<'_>) -> Statistic {
    #[expect(unsafe_code, reason = "a Vulkan union read by its format")]
    // SAFETY: `format` says which member the driver wrote.
    let value = unsafe {
        match s.format {
            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                StatisticValue::Bool(s.value.b32 == vk::TRUE)
            }
            vk::PipelineExecutableStatisticFormatKHR::INT64 => StatisticValue::Int(s.value.i64),
            vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => StatisticValue::Float(s.value.f64),
            _ => StatisticValue::UInt(s.value.u64),
        }
    };
    Statistic {
        name: text(s.name_as_c_str()),
        description: text(s.description_as_c_str()),
        value,
    }
}

/// The index of `entry` in `module`.
fn entry_index(module: &naga::Module, entry: &str) -> Result<usize, StatsError> {
    module
        .entry_points
        .iter()
        .position(|e| e.name == entry)
        .ok_or_else(|| StatsError::Module(format!("no entry point `{entry}`")))
}

/// The bindings `entry` uses, per descriptor set 0, 1, … (empty sets in the gaps), as
/// Vulkan descriptors of the compute stage; an error for a binding array of no fixed
/// size, which needs descriptor indexing this device does not set up.
pub fn descriptor_sets(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
) -> Result<Vec<Vec<vk::DescriptorSetLayoutBinding<'static>>>, StatsError> {
    let uses = info.get_entry_point(entry_index(module, entry)?);
    let mut sets: Vec<Vec<vk::DescriptorSetLayoutBinding<'static>>> = Vec::new();
    for (handle, var) in module.global_variables.iter() {
        let Some(binding) = &var.binding else {
            continue;
        };
        if uses[handle].is_empty() {
            continue;
        }
        let (ty, count) = match module.types[var.ty].inner {
            naga::TypeInner::BindingArray { base, size } => match size {
                naga::ArraySize::Constant(n) => (base, n.get()),
                _ => {
                    return Err(StatsError::Module(format!(
                        "binding {}.{} is a binding array of no fixed size",
                        binding.group, binding.binding
                    )));
                }
            },
            _ => (var.ty, 1),
        };
        let kind = match (var.space, &module.types[ty].inner) {
            (naga::AddressSpace::Uniform, _) => vk::DescriptorType::UNIFORM_BUFFER,
            (naga::AddressSpace::Storage { .. }, _) => vk::DescriptorType::STORAGE_BUFFER,
            (_, naga::TypeInner::Sampler { .. }) => vk::DescriptorType::SAMPLER,
            (
                _,
                naga::TypeInner::Image {
                    class: naga::ImageClass::Storage { .. },
                    ..
                },
            ) => vk::DescriptorType::STORAGE_IMAGE,
            (_, naga::TypeInner::Image { .. }) => vk::DescriptorType::SAMPLED_IMAGE,
            (space, inner) => {
                return Err(StatsError::Module(format!(
                    "binding {}.{}: {space:?} {inner:?} has no descriptor here",
                    binding.group, binding.binding
                )));
            }
        };
        let set = binding.group as usize;
        if sets.len() <= set {
            sets.resize_with(set + 1, Vec::new);
        }
        sets[set].push(
            vk::DescriptorSetLayoutBinding::default()
                .binding(binding.binding)
                .descriptor_type(kind)
                .descriptor_count(count)
                .stage_flags(vk::ShaderStageFlags::COMPUTE),
        );
    }
    Ok(sets)
}

/// The sizes in bytes (naga's layout) of the globals in `space` that `entry` uses.
fn used_sizes(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
    space: naga::AddressSpace,
) -> Result<Vec<u32>, StatsError> {
    let uses = info.get_entry_point(entry_index(module, entry)?);
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| StatsError::Module(e.to_string()))?;
    Ok(module
        .global_variables
        .iter()
        .filter(|(h, v)| v.space == space && !uses[*h].is_empty())
        .map(|(_, v)| layouter[v.ty].size)
        .collect())
}

/// The bytes of immediate data (push constants) `entry` reads, 0 for none.
fn immediate_bytes(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
) -> Result<u32, StatsError> {
    let sizes = used_sizes(module, info, entry, naga::AddressSpace::Immediate)?;
    Ok(sizes.into_iter().max().unwrap_or(0))
}

/// The bytes of workgroup memory `entry` declares (naga's layout of its `var<workgroup>`s).
pub fn workgroup_bytes(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
) -> Result<u64, StatsError> {
    let sizes = used_sizes(module, info, entry, naga::AddressSpace::WorkGroup)?;
    Ok(sizes.into_iter().map(u64::from).sum())
}
