// G-buffer pass: rasterises the scene once and stores what every material path needs —
// the tangent frame, UV, UV derivatives (a compute pass has no dpdx), the material id
// and motion vectors. No material texture is sampled here except alpha for masked and
// blended materials (variant ALPHA_TEST).
//
// variants: | ALPHA_TEST

#import "common/math.wgsl"
#import "common/scene_draw.wgsl"

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
}

@vertex
fn vs_main(v: VertexIn, @builtin(instance_index) instance_index: u32) -> VertexOut {
    let inst = instances[instance_index];
    let world = inst.world_from_local * vec4f(v.position, 1.0);
    let normal_m = mat3x3f(inst.normal_from_local[0].xyz, inst.normal_from_local[1].xyz, inst.normal_from_local[2].xyz);
    let tangent_m = mat3x3f(inst.world_from_local[0].xyz, inst.world_from_local[1].xyz, inst.world_from_local[2].xyz);
    var out: VertexOut;
    out.clip = frame.clip_from_world * world;
    out.cur_clip = out.clip;
    out.prev_clip = frame.prev_clip_from_world * world;
    out.normal = normal_m * v.normal;
    out.tangent = vec4f(tangent_m * v.tangent.xyz, v.tangent.w);
    out.uv = material_uv(materials[inst.material], v.uv);
    out.material = inst.material;
    return out;
}

struct GBufferOut {
    // Octahedral world normal (xy) and world tangent (zw), each in [-1,1].
    @location(0) normal_tangent: vec4f,
    // Material UV (texture transform applied).
    @location(1) uv: vec2f,
    // (d uv / dx, d uv / dy) in UV units per pixel.
    @location(2) uv_grad: vec4f,
    // Material id | bitangent sign bit.
    @location(3) material: u32,
    // Screen-UV offset from this pixel to where the surface was last frame.
    @location(4) motion: vec2f,
}

// 4×4 Bayer matrix thresholds in (0,1) for screen-door transparency.
fn bayer4(p: vec2u) -> f32 {
    let m = array<u32, 16>(0u, 8u, 2u, 10u, 12u, 4u, 14u, 6u, 3u, 11u, 1u, 9u, 15u, 7u, 13u, 5u);
    return (f32(m[(p.y & 3u) * 4u + (p.x & 3u)]) + 0.5) / 16.0;
}

@fragment
fn fs_main(in: VertexOut, @builtin(front_facing) front: bool) -> GBufferOut {
    let uv_dx = dpdx(in.uv);
    let uv_dy = dpdy(in.uv);
#ifdef ALPHA_TEST
    let m = materials[in.material];
    let alpha = textureSampleGrad(base_color_tex, material_sampler, in.uv, uv_dx, uv_dy).a * m.base_color_factor.a;
    if m.alpha_mode == ALPHA_MASK {
        if alpha < m.alpha_cutoff {
            discard;
        }
    } else if m.alpha_mode == ALPHA_BLEND {
        // Stochastic transparency: keep the fragment with probability alpha.
        if alpha < bayer4(vec2u(in.clip.xy)) {
            discard;
        }
    }
#endif
    var n = normalize(in.normal);
    var t = in.tangent.xyz - n * dot(n, in.tangent.xyz);
    t = select(n.zxy, normalize(t), dot(t, t) > 1e-12);
    var sign_negative = in.tangent.w < 0.0;
    if !front {
        // The back face of a double-sided material: mirror the frame.
        n = -n;
        sign_negative = !sign_negative;
    }
    var out: GBufferOut;
    out.normal_tangent = vec4f(oct_encode(n), oct_encode(t));
    out.uv = in.uv;
    out.uv_grad = vec4f(uv_dx, uv_dy);
    out.material = in.material | select(0u, BITANGENT_NEGATIVE, sign_negative);
    let cur = in.cur_clip.xy / in.cur_clip.w;
    let prev = in.prev_clip.xy / in.prev_clip.w;
    out.motion = (prev - cur) * vec2f(0.5, -0.5);
    return out;
}
