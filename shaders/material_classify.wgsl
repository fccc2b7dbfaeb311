// Material classification for the reference material pass: the screen-space bounding
// rectangle of every material's pixels (`classify`), and from it each material's indirect
// dispatch over only that rectangle (`dispatch_args`), instead of the whole screen.
// `classify` also writes zero into the material targets at every pixel that no material
// dispatch shades (no geometry, or an id past the material count), so the reference pass
// needs no clear of its own: a raster clear of three 4K targets took 3.5 ms on a GPU that
// runs raster work on a small part of its chip.
//
// One workgroup per 8×8 tile finds the distinct materials in its tile (one loop
// iteration per distinct material, ordered by id: common/tile_loop.wgsl), reduces each
// one's pixel bounds in workgroup memory and merges them into the global rectangle with
// four atomics, so global atomic traffic scales with (tiles × distinct materials per
// tile), not pixels.

#import "common/frame.wgsl"
#import "common/tile_loop.wgsl"

// Bounds of one material in pixels. Stored so that a zero-cleared buffer means "empty":
// `min_*_inv` holds (size − min), `max_*` holds (max + 1); both are maximised.
struct MaterialRect {
    min_x_inv: atomic<u32>,
    min_y_inv: atomic<u32>,
    max_x: atomic<u32>,
    max_y: atomic<u32>,
}

@group(0) @binding(0) var material_word: texture_2d<u32>;
@group(0) @binding(1) var<storage, read_write> rects: array<MaterialRect>;
// Per material, the workgroup counts (x, y, z) of its dispatch in reference.wgsl.
@group(0) @binding(2) var<storage, read_write> dispatches: array<u32>;
// The material targets (common/material.wgsl's outputs), zeroed where no material is.
@group(0) @binding(3) var out_base_color: texture_storage_2d<rgba16float, write>;
@group(0) @binding(4) var out_normal_rm: texture_storage_2d<rgba16float, write>;
@group(0) @binding(5) var out_emissive_ao: texture_storage_2d<rgba16float, write>;

// Side of reference.wgsl's square workgroup in pixels.
const SHADE_TILE: u32 = 8u;

var<workgroup> wg_min_x: atomic<u32>;
var<workgroup> wg_min_y: atomic<u32>;
var<workgroup> wg_max_x: atomic<u32>;
var<workgroup> wg_max_y: atomic<u32>;

@compute @workgroup_size(8, 8)
fn classify(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) li: u32) {
    let size = textureDimensions(material_word);
    var material = NO_MATERIAL;
    if all(gid.xy < size) {
        let word = textureLoad(material_word, vec2i(gid.xy), 0).x;
        if word != NO_MATERIAL && (word & MATERIAL_ID_MASK) < arrayLength(&rects) {
            material = word & MATERIAL_ID_MASK;
        }
        if material == NO_MATERIAL {
            textureStore(out_base_color, vec2i(gid.xy), vec4f(0.0));
            textureStore(out_normal_rm, vec2i(gid.xy), vec4f(0.0));
            textureStore(out_emissive_ao, vec2i(gid.xy), vec4f(0.0));
        }
    }
    var pending = material != NO_MATERIAL;
    loop {
        if li == 0u {
            atomicStore(&wg_min_x, 0xFFFFFFFFu);
            atomicStore(&wg_min_y, 0xFFFFFFFFu);
            atomicStore(&wg_max_x, 0u);
            atomicStore(&wg_max_y, 0u);
        }
        let current = tile_next(li, pending, material);
        if current == TILE_LOOP_DONE {
            break;
        }
        if pending && material == current {
            atomicMin(&wg_min_x, gid.x);
            atomicMin(&wg_min_y, gid.y);
            atomicMax(&wg_max_x, gid.x);
            atomicMax(&wg_max_y, gid.y);
            pending = false;
        }
        workgroupBarrier();
        if li == 0u {
            atomicMax(&rects[current].min_x_inv, size.x - atomicLoad(&wg_min_x));
            atomicMax(&rects[current].min_y_inv, size.y - atomicLoad(&wg_min_y));
            atomicMax(&rects[current].max_x, atomicLoad(&wg_max_x) + 1u);
            atomicMax(&rects[current].max_y, atomicLoad(&wg_max_y) + 1u);
        }
    }
}

// One thread per material: its rectangle in SHADE_TILE² workgroups, (0, 0, 0) when it has
// no pixel on screen.
@compute @workgroup_size(64)
fn dispatch_args(@builtin(global_invocation_id) gid: vec3u) {
    let m = gid.x;
    if m >= arrayLength(&rects) || 3u * m + 2u >= arrayLength(&dispatches) {
        return;
    }
    let size = textureDimensions(material_word);
    let hi = vec2u(atomicLoad(&rects[m].max_x), atomicLoad(&rects[m].max_y));
    var groups = vec3u(0u);
    if hi.x != 0u {
        let lo = size - vec2u(atomicLoad(&rects[m].min_x_inv), atomicLoad(&rects[m].min_y_inv));
        groups = vec3u((hi - lo + SHADE_TILE - 1u) / SHADE_TILE, 1u);
    }
    dispatches[3u * m] = groups.x;
    dispatches[3u * m + 1u] = groups.y;
    dispatches[3u * m + 2u] = groups.z;
}
