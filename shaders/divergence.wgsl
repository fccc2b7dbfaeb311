// defines: TILE_W=8, TILE_H=8
// variants: TILE_W=8, TILE_H=8 | TILE_W=8, TILE_H=4 | TILE_W=16, TILE_H=16
//
// Divergence statistics (render::passes::divergence; the CPU reference is
// render::divergence::count_tiles, which defines every number written here).
//
// One workgroup per TILE_W × TILE_H screen tile (the variants are screen::tiles::TileSize)
// counts, over the tile's pixels with geometry:
// - x: distinct material ids,
// - y: distinct decoders under `current_map` (D, the paper's divergence map),
// - z: distinct decoders under `baseline_map`,
// - w: pixels with geometry,
// stores them as one texel of `tile_counts`, and adds the tile to the two D histograms.
//
// A decoder map holds one decoder index per material id; NO_DECODER marks a material
// that decodes nothing, and ids past the end of a map are treated the same way.
//
// The distinct counts use the loop of material_classify.wgsl, fused over the three keys:
// each iteration takes the smallest key still pending of each kind (one workgroup atomicMin
// per kind), counts it, and retires the pixels that hold it, so the loop runs
// max(materials, decoders, baseline decoders) times.

#import "common/frame.wgsl"

const TILE_PIXELS: u32 = ${TILE_W}u * ${TILE_H}u;
// Decoder-map entry of a material without a decoder; also "no key" below.
const NO_DECODER: u32 = 0xFFFFFFFFu;

@group(0) @binding(0) var material_word: texture_2d<u32>;
@group(0) @binding(1) var<storage, read> current_map: array<u32>;
@group(0) @binding(2) var<storage, read> baseline_map: array<u32>;
@group(0) @binding(3) var tile_counts: texture_storage_2d<rgba32uint, write>;
// [0, TILE_PIXELS]: tiles per D under the current map; then the same for the baseline
// map. Cleared by the host before the dispatch.
@group(0) @binding(4) var<storage, read_write> histograms: array<atomic<u32>>;

var<workgroup> wg_candidate: array<atomic<u32>, 3>;
var<workgroup> wg_key: vec3u;
var<workgroup> wg_pixels: atomic<u32>;

@compute @workgroup_size(${TILE_W}, ${TILE_H})
fn count(
    @builtin(workgroup_id) tile: vec3u,
    @builtin(local_invocation_id) local: vec3u,
    @builtin(local_invocation_index) li: u32,
) {
    let pixel = tile.xy * vec2u(${TILE_W}u, ${TILE_H}u) + local.xy;
    // (material, current decoder, baseline decoder); NO_DECODER = nothing to count.
    var keys = vec3u(NO_DECODER);
    if all(pixel < textureDimensions(material_word)) {
        let word = textureLoad(material_word, vec2i(pixel), 0).x;
        if word != NO_MATERIAL {
            let id = word & MATERIAL_ID_MASK;
            keys.x = id;
            if id < arrayLength(&current_map) {
                keys.y = current_map[id];
            }
            if id < arrayLength(&baseline_map) {
                keys.z = baseline_map[id];
            }
        }
    }
    if li == 0u {
        atomicStore(&wg_pixels, 0u);
    }
    workgroupBarrier();
    if keys.x != NO_DECODER {
        atomicAdd(&wg_pixels, 1u);
    }

    var pending = keys != vec3u(NO_DECODER);
    var counts = vec3u(0u);
    loop {
        if li == 0u {
            atomicStore(&wg_candidate[0], NO_DECODER);
            atomicStore(&wg_candidate[1], NO_DECODER);
            atomicStore(&wg_candidate[2], NO_DECODER);
        }
        workgroupBarrier();
        if pending.x {
            atomicMin(&wg_candidate[0], keys.x);
        }
        if pending.y {
            atomicMin(&wg_candidate[1], keys.y);
        }
        if pending.z {
            atomicMin(&wg_candidate[2], keys.z);
        }
        workgroupBarrier();
        if li == 0u {
            wg_key = vec3u(
                atomicLoad(&wg_candidate[0]),
                atomicLoad(&wg_candidate[1]),
                atomicLoad(&wg_candidate[2]),
            );
        }
        let key = workgroupUniformLoad(&wg_key);
        if all(key == vec3u(NO_DECODER)) {
            break;
        }
        counts += select(vec3u(0u), vec3u(1u), key != vec3u(NO_DECODER));
        pending = pending & (keys != key);
    }

    if li == 0u {
        textureStore(tile_counts, tile.xy, vec4u(counts, atomicLoad(&wg_pixels)));
        atomicAdd(&histograms[counts.y], 1u);
        atomicAdd(&histograms[TILE_PIXELS + 1u + counts.z], 1u);
    }
}
