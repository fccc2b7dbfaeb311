// defines: TILE_W=8, TILE_H=8
// variants: TILE_W=8, TILE_H=8 | TILE_W=8, TILE_H=4 | TILE_W=16, TILE_H=16
//
// Screen co-occurrence signatures (render::passes::tile_signatures; the numbers are defined
// by screen::divergence::tile_decoders and cluster::cooccurrence's ViewCounts::count
// over them, which the tests compare with exactly).
//
// One workgroup per TILE_W × TILE_H screen tile (the variants are screen::tiles::TileSize)
// lists the distinct texture sets of the tile's pixels with geometry under `set_map`
// (one set per material id; NO_SET marks a material without a set, and ids past the end
// of the map are treated the same way), ascending, into the tile's slot of `signatures`:
// TILE_PIXELS + 1 words at (tile row · tiles per row + tile column) · (TILE_PIXELS + 1),
// the first the number of sets, then the sets. A tile cannot hold more distinct sets than
// pixels, so the slot always suffices and every signature is exact.
//
// The distinct sets come from common/tile_loop.wgsl's tile_next: each iteration takes the
// smallest set still pending (one workgroup atomicMin), appends it, and retires the pixels
// that hold it, so the loop runs once per distinct set (plus the one that ends it).

#import "common/frame.wgsl"
#import "common/tile_loop.wgsl"

const TILE_PIXELS: u32 = ${TILE_W}u * ${TILE_H}u;
// Map entry of a material without a texture set (the divergence pass's NO_DECODER); also
// "no key" below.
const NO_SET: u32 = 0xFFFFFFFFu;

@group(0) @binding(0) var material_word: texture_2d<u32>;
@group(0) @binding(1) var<storage, read> set_map: array<u32>;
// One slot of TILE_PIXELS + 1 words per tile (see above); every slot's count is written.
@group(0) @binding(2) var<storage, read_write> signatures: array<u32>;

@compute @workgroup_size(${TILE_W}, ${TILE_H})
fn signature(
    @builtin(workgroup_id) tile: vec3u,
    @builtin(num_workgroups) tiles: vec3u,
    @builtin(local_invocation_id) local: vec3u,
    @builtin(local_invocation_index) li: u32,
) {
    let pixel = tile.xy * vec2u(${TILE_W}u, ${TILE_H}u) + local.xy;
    var key = NO_SET;
    if all(pixel < textureDimensions(material_word)) {
        let word = textureLoad(material_word, vec2i(pixel), 0).x;
        if word != NO_MATERIAL {
            let id = word & MATERIAL_ID_MASK;
            if id < arrayLength(&set_map) {
                key = set_map[id];
            }
        }
    }
    let slot = (tile.y * tiles.x + tile.x) * (TILE_PIXELS + 1u);

    var pending = key != NO_SET;
    var count = 0u;
    loop {
        let next = tile_next(li, pending, key);
        if next == TILE_LOOP_DONE {
            break;
        }
        if li == 0u {
            signatures[slot + 1u + count] = next;
        }
        count += 1u;
        pending = pending && key != next;
    }
    if li == 0u {
        signatures[slot] = count;
    }
}
