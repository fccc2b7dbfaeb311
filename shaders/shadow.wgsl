// Sun shadow map: depth of every draw from the sun's orthographic view
// (`Frame.light_clip_from_world`). Masked and blended materials are alpha-tested
// (variant ALPHA_TEST; blended ones keep texels with alpha ≥ 0.5).
//
// variants: | ALPHA_TEST

#import "common/scene_draw.wgsl"

struct VertexOut {
    @builtin(position) clip: vec4f,
    @location(0) uv: vec2f,
    @location(1) @interpolate(flat) material: u32,
}

@vertex
fn vs_main(@location(0) position: vec3f, @location(3) uv: vec2f, @builtin(instance_index) instance_index: u32) -> VertexOut {
    let inst = instances[instance_index];
    var out: VertexOut;
    out.clip = frame.light_clip_from_world * (inst.world_from_local * vec4f(position, 1.0));
    out.uv = material_uv(materials[inst.material], uv);
    out.material = inst.material;
    return out;
}

#ifdef ALPHA_TEST
@fragment
fn fs_main(in: VertexOut) {
    let m = materials[in.material];
    let texel = textureSample(tex_group0, material_sampler, in.uv);
    let alpha = (texel.a + sample_fill.groups[0].a) * m.base_color_factor.a;
    let cutoff = select(0.5, m.alpha_cutoff, m.alpha_mode == ALPHA_MASK);
    if alpha < cutoff {
        discard;
    }
}
#endif
