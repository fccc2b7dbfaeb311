// defines: VERTEX_FLOATS=12
//
// Visibility G-buffer resolve (render::passes::gbuffer_resolve): one thread per pixel
// rebuilds every G-buffer target but depth from the (instance slot, triangle) ids and
// depth the VISIBILITY raster variant of gbuffer.wgsl wrote. Per pixel with geometry
// (depth above 0, the reversed-Z far plane) it fetches the triangle's three vertices,
// transforms them as the vertex shader does, computes perspective-correct barycentrics
// at the pixel centre and at its horizontal and vertical neighbours in its 2×2 quad (one
// pixel right or left, down or up: the UV derivatives are the differences across the
// quad's row and column that the raster path's fine dpdx/dpdy take), and writes
// the targets with the raster path's encodings (common/surface.wgsl). Pixels without
// geometry get NO_MATERIAL and zero motion, as the raster pass's clears give them.
//
// VERTEX_FLOATS: f32 words of one `scene::Vertex` (position 3, normal 3, tangent 4, uv 2).

#import "common/math.wgsl"
#import "common/frame.wgsl"
#import "common/surface.wgsl"

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> instances: array<InstanceData>;
@group(0) @binding(2) var<storage, read> materials: array<MaterialData>;
// The scene's vertex buffer, VERTEX_FLOATS words per vertex.
@group(0) @binding(3) var<storage, read> vertices: array<f32>;
// The scene's index buffer.
@group(0) @binding(4) var<storage, read> indices: array<u32>;
// (instance slot, triangle of its draw), defined where depth > 0.
@group(0) @binding(5) var ids_tex: texture_2d<u32>;
@group(0) @binding(6) var depth_tex: texture_depth_2d;
@group(0) @binding(7) var normal_tangent_out: texture_storage_2d<rgba16float, write>;
@group(0) @binding(8) var uv_out: texture_storage_2d<rg32float, write>;
@group(0) @binding(9) var uv_grad_out: texture_storage_2d<rgba16float, write>;
@group(0) @binding(10) var material_out: texture_storage_2d<r32uint, write>;
@group(0) @binding(11) var motion_out: texture_storage_2d<r32uint, write>;

const VERTEX_FLOATS: u32 = ${VERTEX_FLOATS}u;

// Vertex `index` of the index buffer, of the draw of `inst`, transformed.
fn fetch_vertex(inst: InstanceData, m: MaterialData, index: u32) -> SurfaceVertex {
    let v = u32(i32(indices[index]) + inst.base_vertex) * VERTEX_FLOATS;
    let position = vec3f(vertices[v], vertices[v + 1u], vertices[v + 2u]);
    let normal = vec3f(vertices[v + 3u], vertices[v + 4u], vertices[v + 5u]);
    let tangent = vec4f(vertices[v + 6u], vertices[v + 7u], vertices[v + 8u], vertices[v + 9u]);
    let uv = vec2f(vertices[v + 10u], vertices[v + 11u]);
    return surface_vertex(inst, m, frame.clip_from_world, frame.prev_clip_from_world, position, normal, tangent, uv);
}

// Perspective-correct barycentrics of the point of the triangle's plane seen at `ndc`,
// from the corners' homogeneous (x, y, w) rows `a`, `b`, `c`: λ ∝ (ndc, 1) · M⁻¹ for
// M = [a; b; c], normalised to sum 1 (exact for corners behind the eye too).
fn barycentrics(a: vec3f, b: vec3f, c: vec3f, ndc: vec2f) -> vec3f {
    let p = vec3f(ndc, 1.0);
    let l = vec3f(dot(p, cross(b, c)), dot(p, cross(c, a)), dot(p, cross(a, b)));
    return l / (l.x + l.y + l.z);
}

@compute @workgroup_size(8, 8)
fn resolve(@builtin(global_invocation_id) id: vec3u) {
    let size = textureDimensions(depth_tex);
    if id.x >= size.x || id.y >= size.y {
        return;
    }
    let p = id.xy;
    if textureLoad(depth_tex, p, 0) <= 0.0 {
        textureStore(material_out, p, vec4u(NO_MATERIAL, 0u, 0u, 0u));
        textureStore(motion_out, p, vec4u(0u));
        return;
    }
    let ids = textureLoad(ids_tex, p, 0).xy;
    let inst = instances[ids.x];
    let m = materials[inst.material];
    let first = inst.first_index + 3u * ids.y;
    let v0 = fetch_vertex(inst, m, first);
    let v1 = fetch_vertex(inst, m, first + 1u);
    let v2 = fetch_vertex(inst, m, first + 2u);
    let a = v0.clip.xyw;
    let b = v1.clip.xyw;
    let c = v2.clip.xyw;
    // Counter-clockwise in NDC (y up) is the front face (FrontFace::Ccw); the sign of
    // det(M) says so whatever the signs of the w's. A mirrored instance (negative
    // determinant of its transform) reverses the winding, and its draws take clockwise
    // front faces (render::scene_gpu::Draw::mirrored).
    let w = inst.world_from_local;
    let mirrored = determinant(mat3x3f(w[0].xyz, w[1].xyz, w[2].xyz)) < 0.0;
    let front = (dot(a, cross(b, c)) > 0.0) != mirrored;
    let step = 2.0 * frame.viewport.zw;
    let ndc = (vec2f(p) + 0.5) * vec2f(step.x, -step.y) + vec2f(-1.0, 1.0);
    // The quad neighbour: +1 px from the quad's left column / top row, −1 px from the
    // right column / bottom row (NDC y points up).
    let toward = select(vec2f(1.0), vec2f(-1.0), (p & vec2u(1u)) == vec2u(1u));
    let l = barycentrics(a, b, c, ndc);
    let lx = barycentrics(a, b, c, ndc + vec2f(toward.x * step.x, 0.0));
    let ly = barycentrics(a, b, c, ndc - vec2f(0.0, toward.y * step.y));
    let uv = l.x * v0.uv + l.y * v1.uv + l.z * v2.uv;
    // d uv / dx = uv(right column) − uv(left column), and likewise down − up.
    let uv_dx = (lx.x * v0.uv + lx.y * v1.uv + lx.z * v2.uv - uv) * toward.x;
    let uv_dy = (ly.x * v0.uv + ly.y * v1.uv + ly.z * v2.uv - uv) * toward.y;
    let texel = encode_gbuffer(
        l.x * v0.normal + l.y * v1.normal + l.z * v2.normal,
        l.x * v0.tangent + l.y * v1.tangent + l.z * v2.tangent,
        front,
        uv,
        uv_dx,
        uv_dy,
        inst.material,
        l.x * v0.clip + l.y * v1.clip + l.z * v2.clip,
        l.x * v0.prev_clip + l.y * v1.prev_clip + l.z * v2.prev_clip,
    );
    textureStore(normal_tangent_out, p, texel.normal_tangent);
    textureStore(uv_out, p, vec4f(texel.uv, 0.0, 0.0));
    textureStore(uv_grad_out, p, texel.uv_grad);
    textureStore(material_out, p, vec4u(texel.material, 0u, 0u, 0u));
    textureStore(motion_out, p, vec4u(texel.motion, 0u, 0u, 0u));
}
