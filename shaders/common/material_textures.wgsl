// A material's texture bind group (group 1), as `render::scene_gpu::
// material_bind_group_layout` creates it: the canonical channel groups of its texture set
// (see texture::CHANNELS), their sampler, and what their samples lack.
// 0 = base colour (sRGB) + alpha, 1 = normal X,Y + occlusion + roughness,
// 2 = metallic + emissive (sRGB-encoded; the reader decodes it).

@group(1) @binding(0) var tex_group0: texture_2d<f32>;
@group(1) @binding(1) var tex_group1: texture_2d<f32>;
@group(1) @binding(2) var tex_group2: texture_2d<f32>;
@group(1) @binding(3) var material_sampler: sampler;

// `render::scene_gpu::SampleFill`: per group, added to each sample, so that a channel the
// texture's format does not store (a BC5 normal group's occlusion) reads its neutral
// value; zero where the format stores it.
struct SampleFill {
    groups: array<vec4f, 3>,
}
@group(1) @binding(4) var<uniform> sample_fill: SampleFill;
