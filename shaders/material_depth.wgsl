// Material-depth step of the reference material pass: writes each pixel's material id as
// depth so that one full-screen triangle per material, drawn with an EQUAL depth test,
// shades exactly that material's pixels (the hardware's depth test does the sorting).

#import "common/frame.wgsl"
#import "common/fullscreen.wgsl"

@group(0) @binding(0) var material_word: texture_2d<u32>;

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> FullscreenOut {
    return fullscreen_vertex(vi, 0.0);
}

@fragment
fn fs_main(@builtin(position) pos: vec4f) -> @builtin(frag_depth) f32 {
    let word = textureLoad(material_word, vec2i(pos.xy), 0).x;
    if word == NO_MATERIAL {
        // Background: the depth stays at its clear value, which no material matches.
        return 1.0;
    }
    return material_depth(word & MATERIAL_ID_MASK);
}
