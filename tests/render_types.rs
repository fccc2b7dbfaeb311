//! Host ↔ WGSL struct mirrors: every `#[repr(C)]` struct in `render::gpu_types` has the
//! size naga computes for its WGSL twin in `shaders/common/frame.wgsl`, and the host
//! constants that the shaders hard-code agree.

use neurotex::gpu::shader::ShaderLibrary;
use neurotex::render::gpu_types::{FrameUniform, InstanceData, MaterialData};

/// Byte size of the WGSL struct `name` as laid out by naga.
fn wgsl_size(module: &naga::Module, name: &str) -> u32 {
    module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .map(|(_, t)| match &t.inner {
            naga::TypeInner::Struct { span, .. } => *span,
            other => panic!("{name} is not a struct: {other:?}"),
        })
        .unwrap_or_else(|| panic!("struct {name} not found in common/frame.wgsl"))
}

#[test]
fn struct_sizes_match_wgsl() {
    let lib = ShaderLibrary::embedded();
    // Any entry shader that imports frame.wgsl and uses all three structs.
    let module = lib
        .validate("gbuffer.wgsl", &[])
        .expect("gbuffer.wgsl validates");
    assert_eq!(
        wgsl_size(&module, "Frame") as usize,
        std::mem::size_of::<FrameUniform>()
    );
    assert_eq!(
        wgsl_size(&module, "InstanceData") as usize,
        std::mem::size_of::<InstanceData>()
    );
    assert_eq!(
        wgsl_size(&module, "MaterialData") as usize,
        std::mem::size_of::<MaterialData>()
    );
}

#[test]
fn aov_values_match_wgsl_constants() {
    use neurotex::render::Aov;
    let src = neurotex::gpu::shader::shader_source("common/frame.wgsl").expect("frame.wgsl");
    for (aov, name) in [
        (Aov::Final, "AOV_FINAL"),
        (Aov::Albedo, "AOV_ALBEDO"),
        (Aov::Normal, "AOV_NORMAL"),
        (Aov::Roughness, "AOV_ROUGHNESS"),
        (Aov::Metallic, "AOV_METALLIC"),
        (Aov::Occlusion, "AOV_OCCLUSION"),
        (Aov::Emissive, "AOV_EMISSIVE"),
        (Aov::MaterialId, "AOV_MATERIAL_ID"),
    ] {
        let decl = format!("const {name}: u32 = {}u;", aov as u32);
        assert!(src.contains(&decl), "frame.wgsl lacks `{decl}`");
    }
    let max = format!("{:#X}u", neurotex::render::scene_gpu::MAX_MATERIALS - 1);
    assert!(
        src.contains(&format!("const MATERIAL_ID_MASK: u32 = {max};")),
        "MATERIAL_ID_MASK ≠ MAX_MATERIALS − 1"
    );
}
