// Block compression on the GPU (texture::bcn_gpu; the CPU reference is the ISPC encoder
// of texture::bcn with texture2ddecoder, whose decoded error the tests bound this one by).
//
// One thread per 4×4 block of `source` (an RGBA8 image read with textureLoad; texels past
// the edge repeat the last row and column, as texture::bcn pads). Blocks go to `blocks`
// row by row, `params.row_words` u32 words apart (the host pads rows for a buffer →
// texture copy). Entry points:
//   bc1  RGB, 4-colour mode: endpoints at the extremes of the block's principal axis
//        (power iteration on the covariance), quantised to 5:6:5, nearest palette entry;
//   bc4  channel `params.channel`: min/max endpoints, 8-value mode, nearest entry;
//   bc5  R and G as two BC4 blocks;
//   bc7  mode 6 only (one subset, RGBA 7-bit endpoints + a p-bit each, 4-bit indices):
//        principal-axis endpoints in RGBA, the p-bit per endpoint with the smaller
//        quantisation error, nearest of the 16 interpolated colours.
// No endpoint refinement: each encoder is a single pass over the block.

struct Params {
    // Blocks per row and per column of the level.
    blocks_x: u32,
    blocks_y: u32,
    // u32 words between the starts of two block rows in `blocks`.
    row_words: u32,
    // The channel bc4 encodes (0–3).
    channel: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var source: texture_2d<f32>;
@group(0) @binding(2) var<storage, read_write> blocks: array<u32>;

// The block's 16 texels in 0–255, row-major.
var<private> texels: array<vec4f, 16>;

fn load_block(block: vec2u) {
    let size = textureDimensions(source);
    for (var i = 0u; i < 16u; i++) {
        let p = min(block * 4u + vec2u(i % 4u, i / 4u), size - vec2u(1u));
        texels[i] = round(textureLoad(source, p, 0) * 255.0);
    }
}

// The first word of block `block` (of `words` words) in `blocks`.
fn block_start(block: vec2u, words: u32) -> u32 {
    return block.y * params.row_words + block.x * words;
}

// The unit principal axis of the texels' channels selected by `mask` (zero when they
// are all equal), by power iteration on their covariance.
fn principal_axis(mean: vec4f, mask: vec4f) -> vec4f {
    var cov: mat4x4f = mat4x4f();
    var lo = vec4f(255.0);
    var hi = vec4f(0.0);
    for (var i = 0u; i < 16u; i++) {
        let d = (texels[i] - mean) * mask;
        cov += mat4x4f(d * d.x, d * d.y, d * d.z, d * d.w);
        lo = min(lo, texels[i] * mask);
        hi = max(hi, texels[i] * mask);
    }
    var axis = hi - lo;
    for (var k = 0u; k < 8u; k++) {
        let next = cov * axis;
        let len = length(next);
        if len < 1e-6 {
            break;
        }
        axis = next / len;
    }
    let len = length(axis);
    return select(vec4f(0.0), axis / len, len > 1e-6);
}

fn mean_of_texels() -> vec4f {
    var sum = vec4f(0.0);
    for (var i = 0u; i < 16u; i++) {
        sum += texels[i];
    }
    return sum / 16.0;
}

// The extremes of the texels along `axis` through `mean`, clamped to 0–255.
fn axis_endpoints(mean: vec4f, axis: vec4f) -> array<vec4f, 2> {
    var tmin = 0.0;
    var tmax = 0.0;
    for (var i = 0u; i < 16u; i++) {
        let t = dot(texels[i] - mean, axis);
        tmin = min(tmin, t);
        tmax = max(tmax, t);
    }
    return array<vec4f, 2>(
        clamp(mean + axis * tmax, vec4f(0.0), vec4f(255.0)),
        clamp(mean + axis * tmin, vec4f(0.0), vec4f(255.0)),
    );
}

fn pack565(c: vec3f) -> u32 {
    let q = vec3u(round(c * vec3f(31.0, 63.0, 31.0) / 255.0));
    return (q.x << 11u) | (q.y << 5u) | q.z;
}

fn unpack565(c: u32) -> vec3f {
    let r = (c >> 11u) & 31u;
    let g = (c >> 5u) & 63u;
    let b = c & 31u;
    return vec3f(f32((r << 3u) | (r >> 2u)), f32((g << 2u) | (g >> 4u)), f32((b << 3u) | (b >> 2u)));
}

@compute @workgroup_size(8, 8)
fn bc1(@builtin(global_invocation_id) id: vec3u) {
    let block = id.xy;
    if block.x >= params.blocks_x || block.y >= params.blocks_y {
        return;
    }
    load_block(block);
    let mean = mean_of_texels();
    let ends = axis_endpoints(mean, principal_axis(mean, vec4f(1.0, 1.0, 1.0, 0.0)));
    var c0 = pack565(ends[0].xyz);
    var c1 = pack565(ends[1].xyz);
    if c0 < c1 {
        let t = c0;
        c0 = c1;
        c1 = t;
    }
    var indices = 0u;
    if c0 != c1 {
        let e0 = unpack565(c0);
        let e1 = unpack565(c1);
        let palette = array<vec3f, 4>(e0, e1, (2.0 * e0 + e1) / 3.0, (e0 + 2.0 * e1) / 3.0);
        for (var i = 0u; i < 16u; i++) {
            var best = 0u;
            var best_d = 1e30;
            for (var k = 0u; k < 4u; k++) {
                let d = texels[i].xyz - palette[k];
                let dd = dot(d, d);
                if dd < best_d {
                    best_d = dd;
                    best = k;
                }
            }
            indices |= best << (2u * i);
        }
    }
    let at = block_start(block, 2u);
    blocks[at] = c0 | (c1 << 16u);
    blocks[at + 1u] = indices;
}

// The BC4 block of channel `c` of the texels, as two words.
fn bc4_block(c: u32) -> vec2u {
    var a0 = 0.0;
    var a1 = 255.0;
    for (var i = 0u; i < 16u; i++) {
        a0 = max(a0, texels[i][c]);
        a1 = min(a1, texels[i][c]);
    }
    var lo = u32(a0) | (u32(a1) << 8u);
    var hi = 0u;
    if a0 > a1 {
        for (var i = 0u; i < 16u; i++) {
            // Position 0 (a0) … 7 (a1) along the palette, then its index.
            let p = u32(round((a0 - texels[i][c]) / (a0 - a1) * 7.0));
            let index = select(select(p + 1u, 1u, p == 7u), 0u, p == 0u);
            let bit = 16u + 3u * i;
            if bit < 32u {
                lo |= index << bit;
                if bit > 29u {
                    hi |= index >> (32u - bit);
                }
            } else {
                hi |= index << (bit - 32u);
            }
        }
    }
    return vec2u(lo, hi);
}

@compute @workgroup_size(8, 8)
fn bc4(@builtin(global_invocation_id) id: vec3u) {
    let block = id.xy;
    if block.x >= params.blocks_x || block.y >= params.blocks_y {
        return;
    }
    load_block(block);
    let words = bc4_block(params.channel);
    let at = block_start(block, 2u);
    blocks[at] = words.x;
    blocks[at + 1u] = words.y;
}

@compute @workgroup_size(8, 8)
fn bc5(@builtin(global_invocation_id) id: vec3u) {
    let block = id.xy;
    if block.x >= params.blocks_x || block.y >= params.blocks_y {
        return;
    }
    load_block(block);
    let red = bc4_block(0u);
    let green = bc4_block(1u);
    let at = block_start(block, 4u);
    blocks[at] = red.x;
    blocks[at + 1u] = red.y;
    blocks[at + 2u] = green.x;
    blocks[at + 3u] = green.y;
}

// BC7's 4-bit interpolation weights (of 64).
const WEIGHTS4 = array<f32, 16>(0.0, 4.0, 9.0, 13.0, 17.0, 21.0, 26.0, 30.0, 34.0, 38.0, 43.0, 47.0, 51.0, 55.0, 60.0, 64.0);

// A mode-6 endpoint: 7-bit components and the p-bit below them, value (q << 1) | p.
struct Endpoint {
    q: vec4u,
    p: u32,
}

// The endpoint closest to `e` (0–255), over both p-bits.
fn quantise_endpoint(e: vec4f) -> Endpoint {
    var best = Endpoint(vec4u(0u), 0u);
    var best_d = 1e30;
    for (var p = 0u; p < 2u; p++) {
        let q = clamp(round((e - f32(p)) / 2.0), vec4f(0.0), vec4f(127.0));
        let d = q * 2.0 + f32(p) - e;
        if dot(d, d) < best_d {
            best_d = dot(d, d);
            best = Endpoint(vec4u(q), p);
        }
    }
    return best;
}

// Appends `count` bits of `value` at bit `pos` of `words`.
fn put_bits(words: ptr<function, array<u32, 4>>, pos: ptr<function, u32>, value: u32, count: u32) {
    let word = *pos / 32u;
    let bit = *pos % 32u;
    (*words)[word] |= value << bit;
    if bit + count > 32u {
        (*words)[word + 1u] |= value >> (32u - bit);
    }
    *pos += count;
}

@compute @workgroup_size(8, 8)
fn bc7(@builtin(global_invocation_id) id: vec3u) {
    let block = id.xy;
    if block.x >= params.blocks_x || block.y >= params.blocks_y {
        return;
    }
    load_block(block);
    let mean = mean_of_texels();
    let ends = axis_endpoints(mean, principal_axis(mean, vec4f(1.0)));
    var e0 = quantise_endpoint(ends[0]);
    var e1 = quantise_endpoint(ends[1]);
    let d0 = vec4f(e0.q * 2u + e0.p);
    let d1 = vec4f(e1.q * 2u + e1.p);
    var weights = WEIGHTS4;
    var index: array<u32, 16>;
    for (var i = 0u; i < 16u; i++) {
        var best = 0u;
        var best_d = 1e30;
        for (var k = 0u; k < 16u; k++) {
            let w = weights[k];
            let c = floor(((64.0 - w) * d0 + w * d1 + 32.0) / 64.0);
            let d = texels[i] - c;
            let dd = dot(d, d);
            if dd < best_d {
                best_d = dd;
                best = k;
            }
        }
        index[i] = best;
    }
    // The anchor (texel 0) stores 3 bits: its index must be below 8.
    if index[0] >= 8u {
        let t = e0;
        e0 = e1;
        e1 = t;
        for (var i = 0u; i < 16u; i++) {
            index[i] = 15u - index[i];
        }
    }
    var words = array<u32, 4>(0u, 0u, 0u, 0u);
    var pos = 0u;
    put_bits(&words, &pos, 1u << 6u, 7u);
    for (var c = 0u; c < 4u; c++) {
        put_bits(&words, &pos, e0.q[c], 7u);
        put_bits(&words, &pos, e1.q[c], 7u);
    }
    put_bits(&words, &pos, e0.p, 1u);
    put_bits(&words, &pos, e1.p, 1u);
    put_bits(&words, &pos, index[0], 3u);
    for (var i = 1u; i < 16u; i++) {
        put_bits(&words, &pos, index[i], 4u);
    }
    let at = block_start(block, 4u);
    for (var w = 0u; w < 4u; w++) {
        blocks[at + w] = words[w];
    }
}
