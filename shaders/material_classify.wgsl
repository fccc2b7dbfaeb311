// Material classification for the reference material pass: the screen-space bounding
// rectangle of every material's pixels, so that each material's draw covers only that
// rectangle instead of the whole screen.
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
