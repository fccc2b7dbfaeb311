// What the raster G-buffer (`gbuffer.wgsl`) and the visibility G-buffer's resolve
// (`gbuffer_resolve.wgsl`) share, so that both write the same values: the vertex
// transform and the targets' encodings of an interpolated surface point. Needs
// common/math.wgsl (oct_encode) and common/frame.wgsl (the structs, BITANGENT_NEGATIVE).

// A vertex of a drawn (instance, primitive) pair in world and clip space.
struct SurfaceVertex {
    // This frame's clip position.
    clip: vec4f,
    // Last frame's clip position (motion vectors).
    prev_clip: vec4f,
    // World normal (not normalised: interpolated first).
    normal: vec3f,
    // World tangent; w the bitangent sign.
    tangent: vec4f,
    // Material UV (texture transform applied).
    uv: vec2f,
}

// Transform an object-space vertex of instance `inst` (material `m`) with this frame's
// and last frame's world → clip matrices.
fn surface_vertex(
    inst: InstanceData,
    m: MaterialData,
    clip_from_world: mat4x4f,
    prev_clip_from_world: mat4x4f,
    position: vec3f,
    normal: vec3f,
    tangent: vec4f,
    uv: vec2f,
) -> SurfaceVertex {
    let world = inst.world_from_local * vec4f(position, 1.0);
    let normal_m = mat3x3f(inst.normal_from_local[0].xyz, inst.normal_from_local[1].xyz, inst.normal_from_local[2].xyz);
    let tangent_m = mat3x3f(inst.world_from_local[0].xyz, inst.world_from_local[1].xyz, inst.world_from_local[2].xyz);
    var out: SurfaceVertex;
    out.clip = clip_from_world * world;
    out.prev_clip = prev_clip_from_world * world;
    out.normal = normal_m * normal;
    out.tangent = vec4f(tangent_m * tangent.xyz, tangent.w);
    out.uv = material_uv(m, uv);
    return out;
}

// One G-buffer texel, encoded as the targets store it; the locations are the raster
// G-buffer pass's colour targets, whose fragment output it is.
struct GBufferTexel {
    // Octahedral world normal (xy) and world tangent (zw), each in [-1,1].
    @location(0) normal_tangent: vec4f,
    // Material UV (texture transform applied).
    @location(1) uv: vec2f,
    // (d uv / dx, d uv / dy) in UV units per pixel.
    @location(2) uv_grad: vec4f,
    // Material id | bitangent sign bit.
    @location(3) material: u32,
    // Screen-UV offset from this pixel to where the surface was last frame, as two f16
    // (pack2x16float, x in the low half).
    @location(4) motion: u32,
}

// The texel of a surface point: its interpolated world `normal` and `tangent` (w: the
// bitangent sign), whether the `front` face is seen, its material `uv` and derivatives,
// its `material` and its clip positions this frame and last.
fn encode_gbuffer(
    normal: vec3f,
    tangent: vec4f,
    front: bool,
    uv: vec2f,
    uv_dx: vec2f,
    uv_dy: vec2f,
    material: u32,
    cur_clip: vec4f,
    prev_clip: vec4f,
) -> GBufferTexel {
    var n = normalize(normal);
    var t = tangent.xyz - n * dot(n, tangent.xyz);
    t = select(n.zxy, normalize(t), dot(t, t) > 1e-12);
    var sign_negative = tangent.w < 0.0;
    if !front {
        // The back face of a double-sided material: mirror the frame.
        n = -n;
        sign_negative = !sign_negative;
    }
    var out: GBufferTexel;
    out.normal_tangent = vec4f(oct_encode(n), oct_encode(t));
    out.uv = uv;
    out.uv_grad = vec4f(uv_dx, uv_dy);
    out.material = material | select(0u, BITANGENT_NEGATIVE, sign_negative);
    let cur = cur_clip.xy / cur_clip.w;
    let prev = prev_clip.xy / prev_clip.w;
    out.motion = pack2x16float((prev - cur) * vec2f(0.5, -0.5));
    return out;
}
