// variants: | ALPHA_TEST
// variants: | VISIBILITY
//
// G-buffer pass: rasterises the scene once and stores what every material path needs —
// the tangent frame, UV, UV derivatives (a compute pass has no dpdx), the material id
// and motion vectors. No material texture is sampled here except alpha for masked and
// blended materials (variant ALPHA_TEST).
//
// VISIBILITY: the fragment stores only (instance slot, triangle of the draw) into an
// Rg32Uint target (plus depth); `gbuffer_resolve.wgsl` rebuilds the targets above from
// them. The alpha test and stochastic transparency run exactly as in the raster path.

#ifdef VISIBILITY
enable primitive_index;
#endif

#import "common/math.wgsl"
#import "common/scene_draw.wgsl"
#import "common/surface.wgsl"

struct VertexIn {
    @location(0) position: vec3f,
    @location(1) normal: vec3f,
    @location(2) tangent: vec4f,
    @location(3) uv: vec2f,
}

struct VertexOut {
    @builtin(position) clip: vec4f,
    @location(0) normal: vec3f,
    @location(1) tangent: vec4f,
    @location(2) uv: vec2f,
    @location(3) cur_clip: vec4f,
    @location(4) prev_clip: vec4f,
    @location(5) @interpolate(flat) material: u32,
#ifdef VISIBILITY
    @location(6) @interpolate(flat) instance: u32,
#endif
}

@vertex
fn vs_main(v: VertexIn, @builtin(instance_index) instance_index: u32) -> VertexOut {
    let inst = instances[instance_index];
    let s = surface_vertex(inst, materials[inst.material], frame.clip_from_world, frame.prev_clip_from_world, v.position, v.normal, v.tangent, v.uv);
    var out: VertexOut;
    out.clip = s.clip;
    out.cur_clip = s.clip;
    out.prev_clip = s.prev_clip;
    out.normal = s.normal;
    out.tangent = s.tangent;
    out.uv = s.uv;
    out.material = inst.material;
#ifdef VISIBILITY
    out.instance = instance_index;
#endif
    return out;
}

// 4×4 Bayer matrix thresholds in (0,1) for screen-door transparency.
fn bayer4(p: vec2u) -> f32 {
    let m = array<u32, 16>(0u, 8u, 2u, 10u, 12u, 4u, 14u, 6u, 3u, 11u, 1u, 9u, 15u, 7u, 13u, 5u);
    return (f32(m[(p.y & 3u) * 4u + (p.x & 3u)]) + 0.5) / 16.0;
}

#ifdef ALPHA_TEST
// Masked materials discard below their cutoff; blended ones keep the fragment with
// probability alpha (stochastic transparency).
fn alpha_test(in: VertexOut, uv_dx: vec2f, uv_dy: vec2f) {
    let m = materials[in.material];
    let texel = textureSampleGrad(tex_group0, material_sampler, in.uv, uv_dx, uv_dy);
    let alpha = (texel.a + sample_fill.groups[0].a) * m.base_color_factor.a;
    if m.alpha_mode == ALPHA_MASK {
        if alpha < m.alpha_cutoff {
            discard;
        }
    } else if m.alpha_mode == ALPHA_BLEND {
        if alpha < bayer4(vec2u(in.clip.xy)) {
            discard;
        }
    }
}
#endif

#ifdef VISIBILITY
@fragment
fn fs_main(in: VertexOut, @builtin(primitive_index) primitive: u32) -> @location(0) vec2u {
#ifdef ALPHA_TEST
    alpha_test(in, dpdx(in.uv), dpdy(in.uv));
#endif
    return vec2u(in.instance, primitive);
}
#else
@fragment
fn fs_main(in: VertexOut, @builtin(front_facing) front: bool) -> GBufferTexel {
    let uv_dx = dpdx(in.uv);
    let uv_dy = dpdy(in.uv);
#ifdef ALPHA_TEST
    alpha_test(in, uv_dx, uv_dy);
#endif
    return encode_gbuffer(in.normal, in.tangent, front, in.uv, uv_dx, uv_dy, in.material, in.cur_clip, in.prev_clip);
}
#endif
