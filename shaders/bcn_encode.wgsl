// Block compression on the GPU (render::passes::bcn_encode; the CPU reference is the
// ISPC encoder of texture::bcn with texture2ddecoder, whose decoded error the tests bound
// this one by).
//
// One thread per 4×4 block of the levels of `source` a dispatch encodes (RGBA8 mips read
// with textureLoad; texels past a level's edge repeat its last row and column, as
// texture::bcn pads). `params.levels` lists them, their blocks numbered one after the
// other (row-major within a level), so that one dispatch covers a whole mip chain and
// the small levels run beside the large one instead of one short dispatch each. Each
// level's blocks go to `blocks` from its `first_word`, row by row, `row_words` u32 words
// apart (the host pads rows for a buffer → texture copy). Entry points:
//   bc1  RGB: a `fit` with four colours (colour 0 > colour 1) and, unless that one is
//        exact, one with three (colour 0 ≤ colour 1; the fourth, transparent black, is
//        never used: alpha stays 255), endpoints 5:6:5; the one with the smaller error;
//   bc4  channel `params.channel`: a `fit` with 8-bit endpoints, 8-value mode (the
//        6-value mode's 0 and 255 are not tried);
//   bc5  R and G as two BC4 blocks;
//   bc7  modes 6, 5, 4 and 7 (with alpha) or 1 and 3 (opaque): per block the one with
//        the smallest squared error over RGBA in the decoder's 0–255 values. Trials,
//        in one loop (left once a block is exact):
//          mode 6, RGBA along one line (7-bit endpoints + p-bits, 4-bit indices);
//          mode 5 in each rotation (a channel swapped into alpha): RGB on a line with
//          7-bit endpoints, alpha apart with 8-bit ones, 2-bit indices each — blocks
//          whose fourth channel is unrelated (the normal/occlusion/roughness group);
//          mode 4 in mode 5's best rotation, both index modes (5/6-bit endpoints, 2- and
//          3-bit indices);
//          two subsets in each of the PARTITION_CANDIDATES shapes of the 64 whose
//          subsets lie closest to a line (`best_partitions`: the variance off each
//          subset's principal axis, from its moments): mode 7 (RGBA 5-bit endpoints +
//          p-bits, 2-bit indices) when the block has alpha, else mode 1 (RGB 6-bit + a
//          p-bit per subset, 3-bit indices) and mode 3 (RGB 7-bit + p-bits, 2-bit).
//        Modes 0 and 2 (three subsets) are not tried.
// Every fit (`fit`): endpoints at the extremes of the principal axis, quantised (BC7:
// with the better p-bits), each texel's nearer of the two palette values around its
// projection, then up to REFINEMENTS least-squares refinements of the endpoints over the
// chosen indices while they lower the error. The error is the squared one in 0–255 of
// the decoded values: BC7's as its decoder rounds them, BC1's and BC4's unrounded
// (their decoders round interpolated values differently, by up to one).
// Cost per block (16 texels, loops unrolled): a fit is ~1.3k ALU ops + up to 3 rounds of
// ~2.5k (evaluate ~1.8k, least squares ~0.5k), ~9k at most: BC1 ≤ ~18k (two fits), BC4
// ~9k, BC5 ~18k.
// BC7: `best_partitions` 64 shapes × (one pass of moments + two 4×4 power iterations),
// ~80k; 17 fits with alpha (1 + 8 + 4 + 4), 21 opaque (+ 4 for mode 3): ≤ ~270k.

// Levels one dispatch encodes at most (render::passes::bcn_encode::MAX_LEVELS).
const MAX_LEVELS: u32 = 16u;
// Threads per workgroup (render::passes::bcn_encode::WORKGROUP_BLOCKS): one block each.
const WORKGROUP_BLOCKS: u32 = 64u;

// One level of a dispatch.
struct Level {
    // Blocks per row and per column of the level.
    blocks_x: u32,
    blocks_y: u32,
    // The number of the level's first block among the dispatch's blocks.
    first_block: u32,
    // The mip of `source` it reads.
    mip: u32,
    // The u32 word of `blocks` its first block starts at, and the words between the
    // starts of two of its block rows.
    first_word: u32,
    row_words: u32,
    // Its size in texels (texels past it repeat its last row and column).
    size: vec2u,
}

struct Params {
    // Levels in `levels` (1 ..= MAX_LEVELS), in order of `first_block`.
    level_count: u32,
    // The channel bc4 encodes (0–3).
    channel: u32,
    // Workgroups per row of the dispatch grid (the block number is row-major over it).
    groups_x: u32,
    _pad0: u32,
    levels: array<Level, MAX_LEVELS>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var source: texture_2d<f32>;
@group(0) @binding(2) var<storage, read_write> blocks: array<u32>;

// The block's 16 texels in 0–255, row-major.
var<private> texels: array<vec4f, 16>;

// The level and the block (within it) of this thread's block, set by load_block.
var<private> level: Level;
var<private> block: vec2u;

// The number of this thread's block among the dispatch's blocks.
fn block_number(workgroup: vec3u, thread: u32) -> u32 {
    return (workgroup.y * params.groups_x + workgroup.x) * WORKGROUP_BLOCKS + thread;
}

// Finds block `number`'s level and block and loads its texels: false (and nothing
// loaded) past the last level's blocks.
fn load_block(number: u32) -> bool {
    var l = 0u;
    while l + 1u < min(params.level_count, MAX_LEVELS) && number >= params.levels[l + 1u].first_block {
        l++;
    }
    level = params.levels[l];
    let index = number - level.first_block;
    if index >= level.blocks_x * level.blocks_y {
        return false;
    }
    block = vec2u(index % level.blocks_x, index / level.blocks_x);
    for (var i = 0u; i < 16u; i++) {
        let p = min(block * 4u + vec2u(i % 4u, i / 4u), max(level.size, vec2u(1u)) - vec2u(1u));
        texels[i] = round(textureLoad(source, p, level.mip) * 255.0);
    }
    return true;
}

// Stores the first `count` of `words` as the thread's block (of `count` words each).
fn store_block(words: array<u32, 4>, count: u32) {
    let at = level.first_word + block.y * level.row_words + block.x * count;
    for (var w = 0u; w < count; w++) {
        blocks[at + w] = words[w];
    }
}

const ALL_TEXELS: u32 = 0xffffu;
const RGB = vec4f(1.0, 1.0, 1.0, 0.0);
const RGBA = vec4f(1.0);

fn outer(a: vec4f, b: vec4f) -> mat4x4f {
    return mat4x4f(a * b.x, a * b.y, a * b.z, a * b.w);
}

// The raw moments of the texels in `members` (bit i: texel i), channels outside `mask`
// zeroed.
struct Moments {
    sum_sq: mat4x4f,
    sum: vec4f,
    count: f32,
}

fn moments(members: u32, mask: vec4f) -> Moments {
    var m = Moments(mat4x4f(), vec4f(0.0), 0.0);
    for (var i = 0u; i < 16u; i++) {
        let x = texels[i] * mask * f32((members >> i) & 1u);
        m.sum_sq += outer(x, x);
        m.sum += x;
    }
    m.count = f32(countOneBits(members));
    return m;
}

fn covariance(m: Moments) -> mat4x4f {
    return m.sum_sq - outer(m.sum, m.sum / max(m.count, 1.0));
}

// The unit dominant eigenvector of `cov` (zero when `cov` is), by power iteration from
// its column of largest variance.
fn dominant_axis(cov: mat4x4f) -> vec4f {
    var axis = cov[0];
    var top = cov[0].x;
    if cov[1].y > top {
        axis = cov[1];
        top = cov[1].y;
    }
    if cov[2].z > top {
        axis = cov[2];
        top = cov[2].z;
    }
    if cov[3].w > top {
        axis = cov[3];
    }
    for (var k = 0u; k < 4u; k++) {
        axis = cov * axis;
        axis /= max(length(axis), 1e-6);
    }
    let len = length(axis);
    return select(vec4f(0.0), axis / len, len > 1e-6);
}

// The extremes of the texels in `members` along `axis` through `mean`, clamped to 0–255.
fn axis_extremes(members: u32, mask: vec4f, mean: vec4f, axis: vec4f) -> array<vec4f, 2> {
    var tmin = 0.0;
    var tmax = 0.0;
    for (var i = 0u; i < 16u; i++) {
        // Texels outside `members` project to 0, between the members' extremes.
        let t = dot(texels[i] * mask - mean, axis) * f32((members >> i) & 1u);
        tmin = min(tmin, t);
        tmax = max(tmax, t);
    }
    return array<vec4f, 2>(
        clamp(mean + axis * tmax, vec4f(0.0), vec4f(255.0)),
        clamp(mean + axis * tmin, vec4f(0.0), vec4f(255.0)),
    );
}

// ---- Endpoint fits (BC1, BC4, BC7) ----

// The values a decoder interpolates between two endpoints e0, e1: `last` + 1 of them,
// index k at weight k / `last` of the way to e1 (BC1, BC4: unrounded), or BC7's
// (`bc7`) at its 6-bit weights round(64 k / last), rounded to nearest.
struct Palette {
    last: u32,
    bc7: bool,
}

// The palette of `index_bits`-bit BC7 indices.
fn bc7_palette(index_bits: u32) -> Palette {
    return Palette((1u << index_bits) - 1u, true);
}

// The weight (0–1) of e1 at index `k` of `palette`.
fn weight(palette: Palette, k: u32) -> f32 {
    let w = f32(k) / f32(palette.last);
    return select(w, round(64.0 * w) / 64.0, palette.bc7);
}

// The value at index `k` of `palette` between `e0` and `e1` (0–255), as the decoder
// computes it.
fn interpolate(palette: Palette, e0: vec4f, e1: vec4f, k: u32) -> vec4f {
    if palette.bc7 {
        let w = 64.0 * weight(palette, k);
        return floor(((64.0 - w) * e0 + w * e1 + 32.0) / 64.0);
    }
    return (f32(palette.last - k) * e0 + f32(k) * e1) / f32(palette.last);
}

// Endpoint p-bits: none, one per endpoint, one per subset.
const PBIT_NONE: u32 = 0u;
const PBIT_UNIQUE: u32 = 1u;
const PBIT_SHARED: u32 = 2u;

// Least-squares refinements of each fit's endpoints.
const REFINEMENTS: u32 = 2u;

// Endpoints of one subset and the indices of its texels: `e0`, `e1` hold each
// component's stored value with the p-bit as its lowest bit (`bits` bits in all);
// `index` 4 bits per texel (texel i at bits 4 (i % 8) of component i / 8), zero for
// texels outside the subset; `err` the squared error over the fitted channels in 0–255.
struct Fit {
    e0: vec4u,
    e1: vec4u,
    index: vec2u,
    err: f32,
}

// A `bits`-bit endpoint value as the decoder expands it to 8 bits.
fn expand(v: vec4u, bits: vec4u) -> vec4f {
    let x = v << (8u - bits);
    return vec4f(x | (x >> bits));
}

// `a` and `b` (0–255) as `bits`-bit endpoint values, the p-bits chosen for the smaller
// error over `mask`.
fn quantise(a: vec4f, b: vec4f, mask: vec4f, bits: vec4u, pbit: u32) -> array<vec4u, 2> {
    let top = vec4f((vec4u(1u) << bits) - 1u);
    let ends = array<vec4f, 2>(clamp(a, vec4f(0.0), vec4f(255.0)), clamp(b, vec4f(0.0), vec4f(255.0)));
    if pbit == PBIT_NONE {
        return array<vec4u, 2>(vec4u(round(ends[0] * top / 255.0)), vec4u(round(ends[1] * top / 255.0)));
    }
    // Entry 2 e + p: endpoint e with p-bit p.
    var q: array<vec4u, 4>;
    var err: array<f32, 4>;
    for (var e = 0u; e < 2u; e++) {
        for (var p = 0u; p < 2u; p++) {
            let high = clamp(round((ends[e] * top / 255.0 - f32(p)) / 2.0), vec4f(0.0), vec4f((top - 1.0) / 2.0));
            let v = vec4u(high) * 2u + p;
            let d = (expand(v, bits) - ends[e]) * mask;
            q[2u * e + p] = v;
            err[2u * e + p] = dot(d, d);
        }
    }
    if pbit == PBIT_SHARED {
        let p = select(0u, 1u, err[1] + err[3] < err[0] + err[2]);
        return array<vec4u, 2>(q[p], q[2u + p]);
    }
    return array<vec4u, 2>(q[select(0u, 1u, err[1] < err[0])], q[select(2u, 3u, err[3] < err[2])]);
}

fn index_of(index: vec2u, i: u32) -> u32 {
    return (index[i / 8u] >> (4u * (i % 8u))) & 15u;
}

// The fit of endpoints `ends` to the texels of `members` over `mask`: each texel's
// nearest interpolated colour, as the decoder computes it, of the two whose weights
// bracket its projection on the endpoints' line.
fn evaluate(members: u32, mask: vec4f, palette: Palette, ends: array<vec4u, 2>, bits: vec4u) -> Fit {
    let e0 = expand(ends[0], bits) * mask;
    let e1 = expand(ends[1], bits) * mask;
    let d = e1 - e0;
    let dd = dot(d, d);
    let last = palette.last;
    var fit = Fit(ends[0], ends[1], vec2u(0u), 0.0);
    for (var i = 0u; i < 16u; i++) {
        let member = ((members >> i) & 1u) != 0u;
        let x = texels[i] * mask;
        let t = select(0.0, clamp(dot(x - e0, d) / dd, 0.0, 1.0), dd > 0.0);
        let below = min(u32(t * f32(last)), last - 1u);
        var best = 0u;
        var best_err = 1e30;
        for (var j = 0u; j < 2u; j++) {
            let k = below + j;
            let diff = x - interpolate(palette, e0, e1, k);
            let err = dot(diff, diff);
            if err < best_err {
                best_err = err;
                best = k;
            }
        }
        fit.index[i / 8u] |= select(0u, best, member) << (4u * (i % 8u));
        fit.err += select(0.0, best_err, member);
    }
    return fit;
}

// The endpoints (0–255) that minimise the squared error of the texels of `members` at
// the weights of `index`, by least squares. When every texel has the same weight, any
// endpoints whose interpolation there is `mean` are as good: they are put `spread`
// apart around it, so that quantised they bracket it and an interpolated colour
// between them can land on it (a flat block's exact colour is often only there).
fn least_squares(members: u32, mask: vec4f, palette: Palette, index: vec2u, mean: vec4f, spread: vec4f) -> array<vec4f, 2> {
    var aa = 0.0;
    var ab = 0.0;
    var bb = 0.0;
    var xa = vec4f(0.0);
    var xb = vec4f(0.0);
    for (var i = 0u; i < 16u; i++) {
        let member = f32((members >> i) & 1u);
        let w = weight(palette, index_of(index, i));
        let x = texels[i] * mask * member;
        aa += (1.0 - w) * (1.0 - w) * member;
        ab += (1.0 - w) * w * member;
        bb += w * w * member;
        xa += (1.0 - w) * x;
        xb += w * x;
    }
    let det = aa * bb - ab * ab;
    if det < 1e-3 {
        return array<vec4f, 2>(mean - 0.5 * spread * mask, mean + 0.5 * spread * mask);
    }
    return array<vec4f, 2>((bb * xa - ab * xb) / det, (aa * xb - ab * xa) / det);
}

// The best fit found for the texels of `members` over `mask` with `index_bits`-bit
// indices and `bits`-bit endpoints: endpoints at the extremes of the principal axis,
// then REFINEMENTS least-squares refinements, each kept when it lowers the error.
fn fit(members: u32, mask: vec4f, palette: Palette, bits: vec4u, pbit: u32) -> Fit {
    let m = moments(members, mask);
    let mean = m.sum / max(m.count, 1.0);
    var ends = axis_extremes(members, mask, mean, dominant_axis(covariance(m)));
    var best = Fit(vec4u(0u), vec4u(0u), vec2u(0u), 1e30);
    var improved = true;
    for (var r = 0u; r <= REFINEMENTS && improved; r++) {
        let next = evaluate(members, mask, palette, quantise(ends[0], ends[1], mask, bits, pbit), bits);
        improved = next.err < best.err;
        if improved {
            best = next;
        }
        // Quantisation steps of the components above the p-bit.
        let spread = 255.0 / vec4f((vec4u(1u) << (bits - select(0u, 1u, pbit != PBIT_NONE))) - 1u);
        ends = least_squares(members, mask, palette, best.index, mean, spread);
    }
    return best;
}

// `fit` with its endpoints swapped and its indices (of `last` + 1 values) mirrored.
fn mirror(fit: Fit, members: u32, last: u32) -> Fit {
    var out = Fit(fit.e1, fit.e0, vec2u(0u), fit.err);
    for (var i = 0u; i < 16u; i++) {
        let k = select(0u, last - index_of(fit.index, i), ((members >> i) & 1u) != 0u);
        out.index[i / 8u] |= k << (4u * (i % 8u));
    }
    return out;
}

// ---- BC1, BC4, BC5 ----

// BC1's 5:6:5 endpoints.
const BC1_BITS = vec4u(5u, 6u, 5u, 8u);

fn pack565(e: vec4u) -> u32 {
    return (e.x << 11u) | (e.y << 5u) | e.z;
}

// The stored index of palette position `k` (0: endpoint 0 … `last`: endpoint 1) in BC1
// and BC4 blocks, which keep the two endpoints at 0 and 1 and the values between them
// after.
fn stored_index(k: u32, last: u32) -> u32 {
    return select(select(k + 1u, 1u, k == last), 0u, k == 0u);
}

// The BC1 block of `fit` over the palette of `last` + 1 colours, as two words: four
// colours need colour 0 > colour 1 and three (the fourth, transparent black, unused)
// colour 0 ≤ colour 1, so `fit` is mirrored when its order is the other. Equal
// endpoints decode as three colours whatever the indices, all 0 then.
fn bc1_block(fit: Fit, last: u32) -> vec2u {
    var ends = fit;
    if (last == 3u) == (pack565(ends.e0) < pack565(ends.e1)) {
        ends = mirror(fit, ALL_TEXELS, last);
    }
    let c0 = pack565(ends.e0);
    let c1 = pack565(ends.e1);
    var indices = 0u;
    for (var i = 0u; i < 16u && c0 != c1; i++) {
        indices |= stored_index(index_of(ends.index, i), last) << (2u * i);
    }
    return vec2u(c0 | (c1 << 16u), indices);
}

@compute @workgroup_size(WORKGROUP_BLOCKS)
fn bc1(@builtin(workgroup_id) workgroup: vec3u, @builtin(local_invocation_index) thread: u32) {
    if !load_block(block_number(workgroup, thread)) {
        return;
    }
    // Four colours, then three (the midpoint can be nearer than either third) unless
    // four are exact.
    var best = fit(ALL_TEXELS, RGB, Palette(3u, false), BC1_BITS, PBIT_NONE);
    var last = 3u;
    if best.err > 0.0 {
        let three = fit(ALL_TEXELS, RGB, Palette(2u, false), BC1_BITS, PBIT_NONE);
        if three.err < best.err {
            best = three;
            last = 2u;
        }
    }
    let words = bc1_block(best, last);
    store_block(array<u32, 4>(words.x, words.y, 0u, 0u), 2u);
}

// The BC4 block of channel `c` of the texels, as two words: 8-value mode (endpoint 0 >
// endpoint 1; equal endpoints decode as 6-value mode, indices all 0 then).
fn bc4_block(c: u32) -> vec2u {
    let mask = select(vec4f(0.0), vec4f(1.0), vec4u(c) == vec4u(0u, 1u, 2u, 3u));
    var ends = fit(ALL_TEXELS, mask, Palette(7u, false), vec4u(8u), PBIT_NONE);
    if ends.e0[c] < ends.e1[c] {
        ends = mirror(ends, ALL_TEXELS, 7u);
    }
    var lo = ends.e0[c] | (ends.e1[c] << 8u);
    var hi = 0u;
    for (var i = 0u; i < 16u && ends.e0[c] > ends.e1[c]; i++) {
        let index = stored_index(index_of(ends.index, i), 7u);
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
    return vec2u(lo, hi);
}

@compute @workgroup_size(WORKGROUP_BLOCKS)
fn bc4(@builtin(workgroup_id) workgroup: vec3u, @builtin(local_invocation_index) thread: u32) {
    if !load_block(block_number(workgroup, thread)) {
        return;
    }
    let words = bc4_block(params.channel);
    store_block(array<u32, 4>(words.x, words.y, 0u, 0u), 2u);
}

@compute @workgroup_size(WORKGROUP_BLOCKS)
fn bc5(@builtin(workgroup_id) workgroup: vec3u, @builtin(local_invocation_index) thread: u32) {
    if !load_block(block_number(workgroup, thread)) {
        return;
    }
    let red = bc4_block(0u);
    let green = bc4_block(1u);
    store_block(array<u32, 4>(red.x, red.y, green.x, green.y), 4u);
}

// ---- BC7 ----

// The 64 two-subset partitions: bit i set when texel i is in subset 1.
var<private> partitions: array<u32, 64> = array<u32, 64>(
    0xccccu, 0x8888u, 0xeeeeu, 0xecc8u, 0xc880u, 0xfeecu, 0xfec8u, 0xec80u,
    0xc800u, 0xffecu, 0xfe80u, 0xe800u, 0xffe8u, 0xff00u, 0xfff0u, 0xf000u,
    0xf710u, 0x008eu, 0x7100u, 0x08ceu, 0x008cu, 0x7310u, 0x3100u, 0x8cceu,
    0x088cu, 0x3110u, 0x6666u, 0x366cu, 0x17e8u, 0x0ff0u, 0x718eu, 0x399cu,
    0xaaaau, 0xf0f0u, 0x5a5au, 0x33ccu, 0x3c3cu, 0x55aau, 0x9696u, 0xa55au,
    0x73ceu, 0x13c8u, 0x324cu, 0x3bdcu, 0x6996u, 0xc33cu, 0x9966u, 0x0660u,
    0x0272u, 0x04e4u, 0x4e40u, 0x2720u, 0xc936u, 0x936cu, 0x39c6u, 0x639cu,
    0x9336u, 0x9cc6u, 0x817eu, 0xe718u, 0xccf0u, 0x0fccu, 0x7744u, 0xee22u,
);

// Subset 1's anchor texel of each shape, 4 bits each, shape p at bits 4 (p % 8)
// of word p / 8.
var<private> anchors: array<u32, 8> = array<u32, 8>(
    0xffffffffu, 0xffffffffu, 0xf882282fu, 0x22882282u,
    0xff8286ffu, 0x6ff22282u, 0x22ff8626u, 0xf22fffffu,
);

fn anchor_of(shape: u32) -> u32 {
    return (anchors[shape / 8u] >> (4u * (shape % 8u))) & 15u;
}

// Two-subset partitions fitted in full per block (the best by the estimate of
// `best_partitions`).
const PARTITION_CANDIDATES: u32 = 2u;
// `fit` with its endpoints swapped and its indices mirrored when the index of texel
// `anchor` has its top bit set (an anchor's index is stored without it).
fn fix_anchor(fit: Fit, members: u32, anchor: u32, index_bits: u32) -> Fit {
    let last = (1u << index_bits) - 1u;
    if index_of(fit.index, anchor) <= last / 2u {
        return fit;
    }
    return mirror(fit, members, last);
}

// Swaps channel `rotation` - 1 of every texel with alpha (modes 4 and 5; rotation 0
// leaves them). Its own inverse.
fn rotate_texels(rotation: u32) {
    for (var i = 0u; i < 16u; i++) {
        let t = texels[i];
        let a = select(select(select(t.w, t.z, rotation == 3u), t.y, rotation == 2u), t.x, rotation == 1u);
        texels[i] = vec4f(select(t.x, t.w, rotation == 1u), select(t.y, t.w, rotation == 2u), select(t.z, t.w, rotation == 3u), a);
    }
}

// The variance of a subset of covariance `cov` off its principal axis.
fn line_residual(cov: mat4x4f) -> f32 {
    let axis = dominant_axis(cov);
    return cov[0].x + cov[1].y + cov[2].z + cov[3].w - dot(axis, cov * axis);
}

// The two-subset partitions with the smallest estimated error over `mask`: the
// residual variance of each subset off its principal axis.
fn best_partitions(mask: vec4f) -> array<u32, PARTITION_CANDIDATES> {
    let all = moments(ALL_TEXELS, mask);
    var best: array<u32, PARTITION_CANDIDATES>;
    var best_err: array<f32, PARTITION_CANDIDATES>;
    for (var k = 0u; k < PARTITION_CANDIDATES; k++) {
        best_err[k] = 1e30;
    }
    for (var p = 0u; p < 64u; p++) {
        let one = moments(partitions[p], mask);
        let zero = Moments(all.sum_sq - one.sum_sq, all.sum - one.sum, all.count - one.count);
        var err = line_residual(covariance(zero)) + line_residual(covariance(one));
        // Insertion into the sorted candidates.
        var q = p;
        for (var k = 0u; k < PARTITION_CANDIDATES; k++) {
            if err < best_err[k] {
                let e = best_err[k];
                let b = best[k];
                best_err[k] = err;
                best[k] = q;
                err = e;
                q = b;
            }
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

// Endpoints `ends[0..count]`, RGB at `color_bits` and alpha at `alpha_bits` (none when 0)
// above the p-bits, then the p-bits.
fn put_endpoints(words: ptr<function, array<u32, 4>>, pos: ptr<function, u32>, ends: array<vec4u, 4>, count: u32, color_bits: u32, alpha_bits: u32, pbit: u32) {
    let shift = select(0u, 1u, pbit != PBIT_NONE);
    for (var c = 0u; c < 3u; c++) {
        for (var e = 0u; e < count; e++) {
            put_bits(words, pos, ends[e][c] >> shift, color_bits);
        }
    }
    for (var e = 0u; e < count && alpha_bits > 0u; e++) {
        put_bits(words, pos, ends[e].w >> shift, alpha_bits);
    }
    for (var e = 0u; e < count && pbit != PBIT_NONE; e += pbit) {
        put_bits(words, pos, ends[e].x & 1u, 1u);
    }
}

// The 16 indices, one bit less at texel 0 and at texel `anchor`.
fn put_indices(words: ptr<function, array<u32, 4>>, pos: ptr<function, u32>, index: vec2u, index_bits: u32, anchor: u32) {
    for (var i = 0u; i < 16u; i++) {
        put_bits(words, pos, index_of(index, i), index_bits - select(0u, 1u, i == 0u || i == anchor));
    }
}

// The encoding chosen for a block: `mode`; `shape` (modes 1, 7) or rotation (modes 4,
// 5); mode 4's index mode (1: RGB has the 3-bit indices); the fits (mode 6: `a`; modes
// 4, 5: RGB `a`, alpha `b`; modes 1, 7: subsets 0 `a` and 1 `b`) and their error.
struct Choice {
    mode: u32,
    shape: u32,
    index_mode: u32,
    a: Fit,
    b: Fit,
    err: f32,
}

// The BC7 block of `choice`, the anchors' indices fixed.
fn pack(choice: Choice) -> array<u32, 4> {
    var words = array<u32, 4>(0u, 0u, 0u, 0u);
    var pos = 0u;
    put_bits(&words, &pos, 1u << choice.mode, choice.mode + 1u);
    if choice.mode == 6u {
        let f = fix_anchor(choice.a, ALL_TEXELS, 0u, 4u);
        put_endpoints(&words, &pos, array<vec4u, 4>(f.e0, f.e1, vec4u(0u), vec4u(0u)), 2u, 7u, 7u, PBIT_UNIQUE);
        put_indices(&words, &pos, f.index, 4u, 0u);
    } else if choice.mode == 4u || choice.mode == 5u {
        // Modes 4 and 5: the 2-bit indices come first.
        let mode4 = choice.mode == 4u;
        let color_bits = select(2u, 2u + choice.index_mode, mode4);
        let alpha_bits = select(2u, 3u - choice.index_mode, mode4);
        let c = fix_anchor(choice.a, ALL_TEXELS, 0u, color_bits);
        let a = fix_anchor(choice.b, ALL_TEXELS, 0u, alpha_bits);
        put_bits(&words, &pos, choice.shape, 2u);
        if mode4 {
            put_bits(&words, &pos, choice.index_mode, 1u);
        }
        let ends = array<vec4u, 4>(vec4u(c.e0.xyz, a.e0.w), vec4u(c.e1.xyz, a.e1.w), vec4u(0u), vec4u(0u));
        put_endpoints(&words, &pos, ends, 2u, select(7u, 5u, mode4), select(8u, 6u, mode4), PBIT_NONE);
        let swap = color_bits > alpha_bits;
        put_indices(&words, &pos, select(c.index, a.index, swap), 2u, 0u);
        put_indices(&words, &pos, select(a.index, c.index, swap), max(color_bits, alpha_bits), 0u);
    } else {
        // Modes 1, 3 and 7.
        let mode1 = choice.mode == 1u;
        let index_bits = select(2u, 3u, mode1);
        let color_bits = select(select(5u, 7u, choice.mode == 3u), 6u, mode1);
        let members = partitions[choice.shape];
        let anchor = anchor_of(choice.shape);
        let f0 = fix_anchor(choice.a, ~members & ALL_TEXELS, 0u, index_bits);
        let f1 = fix_anchor(choice.b, members, anchor, index_bits);
        put_bits(&words, &pos, choice.shape, 6u);
        let ends = array<vec4u, 4>(f0.e0, f0.e1, f1.e0, f1.e1);
        put_endpoints(&words, &pos, ends, 4u, color_bits, select(0u, 5u, choice.mode == 7u), select(PBIT_UNIQUE, PBIT_SHARED, mode1));
        put_indices(&words, &pos, f0.index | f1.index, index_bits, anchor);
    }
    return words;
}

// What `fit` is asked for: the texels, channels, index and endpoint bits and p-bits.
struct FitParams {
    members: u32,
    mask: vec4f,
    index_bits: u32,
    bits: u32,
    pbit: u32,
}

// Trials of a block, in order: 0 mode 6; 1–4 mode 5 in rotations 0–3; 5, 6 mode 4
// (index modes 0, 1) in the rotation best for mode 5; then two subsets in each of the
// PARTITION_CANDIDATES shapes `best_partitions` estimates best: mode 7 when the block
// has alpha, else modes 1 and 3 (their alpha decodes as 255).
const FIRST_PAIR_TRIAL: u32 = 7u;
const TRIALS: u32 = FIRST_PAIR_TRIAL + 2u * PARTITION_CANDIDATES;

@compute @workgroup_size(WORKGROUP_BLOCKS)
fn bc7(@builtin(workgroup_id) workgroup: vec3u, @builtin(local_invocation_index) thread: u32) {
    if !load_block(block_number(workgroup, thread)) {
        return;
    }
    var opaque = true;
    for (var i = 0u; i < 16u; i++) {
        opaque = opaque && texels[i].w == 255.0;
    }
    let mask = select(RGBA, RGB, opaque);
    let candidates = best_partitions(mask);
    let trials = select(FIRST_PAIR_TRIAL + PARTITION_CANDIDATES, TRIALS, opaque);
    let alpha = vec4f(0.0, 0.0, 0.0, 1.0);
    var best = Choice(6u, 0u, 0u, Fit(), Fit(), 1e30);
    var mode5_err = 1e30;
    var mode5_rotation = 0u;
    // One loop over the trials (one `fit` call site per subset or channel part), left
    // early once a block is exact.
    for (var t = 0u; t < trials && best.err > 0.0; t++) {
        // Mode 6 leaves `b` empty (no texels, no error).
        var c = Choice(6u, 0u, 0u, Fit(), Fit(), 0.0);
        var a = FitParams(ALL_TEXELS, RGBA, 4u, 8u, PBIT_UNIQUE);
        var b = FitParams(0u, alpha, 2u, 8u, PBIT_NONE);
        if t >= FIRST_PAIR_TRIAL {
            let k = t - FIRST_PAIR_TRIAL;
            c.mode = select(7u, select(1u, 3u, k >= PARTITION_CANDIDATES), opaque);
            c.shape = candidates[k % PARTITION_CANDIDATES];
            // Mode 7: RGBA 5-bit + p-bits, 2-bit indices; 1: RGB 6-bit + a shared
            // p-bit, 3-bit indices; 3: RGB 7-bit + p-bits, 2-bit indices.
            a = FitParams(0u, mask, select(2u, 3u, c.mode == 1u), select(select(6u, 8u, c.mode == 3u), 7u, c.mode == 1u), select(PBIT_UNIQUE, PBIT_SHARED, c.mode == 1u));
            b = a;
            a.members = ~partitions[c.shape] & ALL_TEXELS;
            b.members = partitions[c.shape];
        } else if t >= 5u {
            c.mode = 4u;
            c.shape = mode5_rotation;
            c.index_mode = t - 5u;
            a = FitParams(ALL_TEXELS, RGB, 2u + c.index_mode, 5u, PBIT_NONE);
            b = FitParams(ALL_TEXELS, alpha, 3u - c.index_mode, 6u, PBIT_NONE);
        } else if t >= 1u {
            c.mode = 5u;
            c.shape = t - 1u;
            a = FitParams(ALL_TEXELS, RGB, 2u, 7u, PBIT_NONE);
            b.members = ALL_TEXELS;
        }
        let rotation = select(0u, c.shape, c.mode == 4u || c.mode == 5u);
        rotate_texels(rotation);
        c.a = fit(a.members, a.mask, bc7_palette(a.index_bits), vec4u(a.bits), a.pbit);
        if b.members != 0u {
            c.b = fit(b.members, b.mask, bc7_palette(b.index_bits), vec4u(b.bits), b.pbit);
        }
        rotate_texels(rotation);
        c.err = c.a.err + c.b.err;
        if c.mode == 5u && c.err < mode5_err {
            mode5_err = c.err;
            mode5_rotation = rotation;
        }
        if c.err < best.err {
            best = c;
        }
    }
    store_block(pack(best), 4u);
}
