// A full-screen triangle without vertex buffers: draw 3 vertices.

struct FullscreenOut {
    @builtin(position) position: vec4f,
    // Screen UV, (0,0) top-left.
    @location(0) uv: vec2f,
}

fn fullscreen_vertex(vertex_index: u32, depth: f32) -> FullscreenOut {
    let uv = vec2f(f32((vertex_index << 1u) & 2u), f32(vertex_index & 2u));
    var out: FullscreenOut;
    out.position = vec4f(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, depth, 1.0);
    out.uv = uv;
    return out;
}
