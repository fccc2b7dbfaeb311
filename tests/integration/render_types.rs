//! Host ↔ WGSL mirrors: every `#[repr(C)]` struct in `render::gpu_types` (and
//! `scene_gpu::SampleFill`) has the size naga computes for its WGSL twin in
//! `shaders/common/frame.wgsl` (`material_textures.wgsl`), and every constant the
//! host and the shaders both declare (ids and masks of the G-buffer word, decoder-map
//! entries, flags, tile and workgroup sizes) has the same value on both sides.

use neurotex::gpu::Defines;
use neurotex::gpu::mirror::{assert_const, assert_mirrors, workgroup_size};
use neurotex::gpu::shader::ShaderLibrary;
use neurotex::ntc::NtcConfig;
use neurotex::render::gpu_types::{
    ALPHA_BLEND, ALPHA_MASK, ALPHA_OPAQUE, FrameUniform, InstanceData, MaterialData,
    SAMPLING_MAG_NEAREST, SAMPLING_MIN_NEAREST, SAMPLING_MIPMAP_LINEAR, SAMPLING_MIPMAP_NEAREST,
    SAMPLING_MIPMAP_NONE, WRAP_CLAMP_TO_EDGE, WRAP_MIRRORED_REPEAT, WRAP_REPEAT,
};
use neurotex::render::passes::ntc_bake::{BakeKernel, NtcBakePass};
use neurotex::render::passes::ntc_decode::{DECODE_STOCHASTIC, NtcDecodePass, NtcKernel};
use neurotex::render::passes::{image_error, reference, temporal};
use neurotex::render::scene_gpu::SampleFill;
use neurotex::screen::material_word::{
    BITANGENT_NEGATIVE, MATERIAL_ID_MASK, NO_DECODER, NO_MATERIAL,
};
use neurotex::screen::tiles::TileSize;

#[test]
fn struct_sizes_match_wgsl() {
    let lib = ShaderLibrary::embedded();
    // Any entry shader that imports frame.wgsl and uses all three structs.
    let module = lib
        .validate("gbuffer.wgsl", &Defines::new())
        .expect("gbuffer.wgsl validates");
    assert_mirrors::<FrameUniform>(&module, "Frame");
    assert_mirrors::<InstanceData>(&module, "InstanceData");
    assert_mirrors::<MaterialData>(&module, "MaterialData");
    // The material bind group's fill (common/material_textures.wgsl).
    let reference = lib
        .validate("reference.wgsl", &Defines::new())
        .expect("reference.wgsl validates");
    assert_mirrors::<SampleFill>(&reference, "SampleFill");
}

/// Every AOV (`material-id` on the command line) has its twin `AOV_MATERIAL_ID` in
/// common/frame.wgsl.
#[test]
fn aov_values_match_wgsl_constants() {
    use neurotex::render::Aov;
    let gbuffer = module("gbuffer.wgsl", &Defines::new());
    for &aov in <Aov as clap::ValueEnum>::value_variants() {
        let value = clap::ValueEnum::to_possible_value(&aov).expect("every AOV is named");
        let name = value.get_name().replace('-', "_").to_uppercase();
        assert_const(&gbuffer, &format!("AOV_{name}"), aov as u32);
    }
    let src = neurotex::gpu::shader::shader_source("common/frame.wgsl").expect("frame.wgsl");
    let max = format!("{:#X}u", neurotex::screen::material_word::MAX_MATERIALS - 1);
    assert!(
        src.contains(&format!("const MATERIAL_ID_MASK: u32 = {max};")),
        "MATERIAL_ID_MASK ≠ MAX_MATERIALS − 1"
    );
}

/// `path` composed with `defines` and validated, as the passes compose it.
fn module(path: &str, defines: &Defines) -> naga::Module {
    ShaderLibrary::embedded()
        .validate(path, defines)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn host_constants_match_their_wgsl_twins() {
    // The G-buffer word and material constants (common/frame.wgsl, through gbuffer.wgsl).
    let gbuffer = module("gbuffer.wgsl", &Defines::new());
    assert_const(&gbuffer, "NO_MATERIAL", NO_MATERIAL);
    assert_const(&gbuffer, "MATERIAL_ID_MASK", MATERIAL_ID_MASK);
    assert_const(&gbuffer, "BITANGENT_NEGATIVE", BITANGENT_NEGATIVE);
    assert_const(&gbuffer, "ALPHA_OPAQUE", ALPHA_OPAQUE);
    assert_const(&gbuffer, "ALPHA_MASK", ALPHA_MASK);
    assert_const(&gbuffer, "ALPHA_BLEND", ALPHA_BLEND);
    for (name, value) in [
        ("WRAP_REPEAT", WRAP_REPEAT),
        ("WRAP_CLAMP_TO_EDGE", WRAP_CLAMP_TO_EDGE),
        ("WRAP_MIRRORED_REPEAT", WRAP_MIRRORED_REPEAT),
        ("SAMPLING_MAG_NEAREST", SAMPLING_MAG_NEAREST),
        ("SAMPLING_MIN_NEAREST", SAMPLING_MIN_NEAREST),
        ("SAMPLING_MIPMAP_LINEAR", SAMPLING_MIPMAP_LINEAR),
        ("SAMPLING_MIPMAP_NEAREST", SAMPLING_MIPMAP_NEAREST),
        ("SAMPLING_MIPMAP_NONE", SAMPLING_MIPMAP_NONE),
    ] {
        assert_const(&gbuffer, name, value);
    }

    // Decode and divergence passes at every tile size, composed as the host composes them.
    let config = NtcConfig::default();
    for tile in TileSize::ALL {
        let defines = NtcDecodePass::defines(&config, NtcKernel::F32, tile);
        let decode = module("ntc_decode_tiles.wgsl", &defines);
        assert_const(&decode, "NTC_NONE", NO_DECODER);
        assert_const(&decode, "NTC_THREADS", tile.pixels());
        assert_const(&decode, "DECODE_STOCHASTIC", DECODE_STOCHASTIC);
        assert_const(&decode, "NTC_OUTPUTS", neurotex::ntc::model::OUTPUTS as u32);
        assert_const(
            &decode,
            "NTC_CHANNEL_GROUPS",
            neurotex::texture::GROUPS as u32,
        );
        assert_const(&decode, "MATERIAL_ID_MASK", MATERIAL_ID_MASK);
        assert_eq!(
            workgroup_size(&decode, "decode"),
            Some([tile.pixels(), 1, 1]),
            "{tile}"
        );
        let divergence = module("divergence.wgsl", &tile.defines());
        assert_const(&divergence, "NO_DECODER", NO_DECODER);
        assert_const(&divergence, "TILE_PIXELS", tile.pixels());
        let (w, h) = tile.dims();
        assert_eq!(workgroup_size(&divergence, "count"), Some([w, h, 1]));
    }

    for kernel in BakeKernel::ALL {
        let bake = module("ntc_bake.wgsl", &NtcBakePass::defines(&config, kernel));
        assert_const(&bake, "NTC_NONE", NO_DECODER);
        let side = kernel.side();
        assert_const(&bake, "NTC_THREADS", side * side);
        assert_eq!(
            workgroup_size(&bake, "bake_mip"),
            Some([side, side, 1]),
            "{kernel}"
        );
    }

    let image_error_module = module("image_error.wgsl", &Defines::new());
    let group = image_error::GROUP_W;
    assert_const(&image_error_module, "GROUP_W", group);
    assert_const(&image_error_module, "GROUP_PIXELS", group * group);

    let classify = module("material_classify.wgsl", &Defines::new());
    assert_mirrors::<reference::MaterialRect>(&classify, "MaterialRect");

    // The square workgroups: (module, entry, side).
    let temporal_module = module("temporal.wgsl", &Defines::new());
    for (shader, entry, side) in [
        (&temporal_module, "resolve", temporal::WORKGROUP_SIZE),
        (&image_error_module, "measure", group),
        (&classify, "classify", reference::CLASSIFY_TILE),
    ] {
        let size = workgroup_size(shader, entry);
        assert_eq!(size, Some([side, side, 1]), "{entry}");
    }
    assert_const(&classify, "NO_MATERIAL", NO_MATERIAL);
}
