// The NTC decoder's input encoding, shared by the trainer and the decode pass: the PCG
// hash and QAT noise, bilinear taps with wrap addressing, and the positional encoding.
// Every function mirrors its CPU reference (src/ntc/train/cpu.rs, src/ntc/model.rs) and
// says where it cannot be bit-exact.

// PCG-RXS-M-XS (Jarzynski & Olano), wrapping u32 arithmetic: cpu::pcg_hash.
fn pcg_hash(x: u32) -> u32 {
    let state = x * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// The part of cpu::qat_noise that depends on (seed, step, material) only:
// pcg(material ^ pcg(step ^ pcg(seed))).
fn qat_noise_key(seed: u32, step: u32, material: u32) -> u32 {
    return pcg_hash(material ^ pcg_hash(step ^ pcg_hash(seed)));
}

// cpu::qat_noise of latent `index` (within its material) for a `qat_noise_key`: uniform
// in [-q/2, q/2). f32(h >> 8) · 2^-24 − 0.5 is exact; the product with q is rounded once,
// as on the CPU.
fn qat_noise(key: u32, index: u32, q: f32) -> f32 {
    let h = pcg_hash(index ^ key);
    return (f32(h >> 8u) * (1.0 / 16777216.0) - 0.5) * q;
}

// A colour mip's pair of latent grids (ntc::model::GridPairGpu): where each grid starts, in
// the unit of the buffer that holds it (the importer's mip struct says which), and its size
// in texels.
struct NtcGridPair {
    fine_offset: u32,
    fine_width: u32,
    fine_height: u32,
    coarse_offset: u32,
    coarse_width: u32,
    coarse_height: u32,
}

// The four bilinear taps of a grid: texel indices (y · width + x) and weights in the
// order (x0, y0), (x1, y0), (x0, y1), (x1, y1), as cpu::bilinear_taps.
struct NtcTaps {
    texel: vec4u,
    weight: vec4f,
}

// One axis of a tap: the two wrapped texel coordinates and the fraction towards the second.
struct NtcTapAxis {
    lo: u32,
    hi: u32,
    frac: f32,
}

fn ntc_tap_axis(t: f32, n: u32) -> NtcTapAxis {
    let c = t * f32(n) - 0.5;
    let lo = floor(c);
    let size = i32(n);
    let i = i32(lo);
    let wrapped_lo = ((i % size) + size) % size;
    let wrapped_hi = ((i + 1) % size + size) % size;
    return NtcTapAxis(u32(wrapped_lo), u32(wrapped_hi), c - lo);
}

// Taps of a `width × height` grid at normalised coordinates (u, v): the continuous texel
// coordinate is u · width − ½ (texel centres at half-integers), wrap addressing. In f32
// (the CPU works in f64), so weights agree to about 1e-7 and a coordinate within an ulp
// of an integer may pick the neighbouring tap pair with a weight of ≈ 0 on the far tap.
fn ntc_bilinear_taps(u: f32, v: f32, width: u32, height: u32) -> NtcTaps {
    let x = ntc_tap_axis(u, width);
    let y = ntc_tap_axis(v, height);
    return NtcTaps(
        vec4u(y.lo * width + x.lo, y.lo * width + x.hi, y.hi * width + x.lo, y.hi * width + x.hi),
        vec4f(
            (1.0 - x.frac) * (1.0 - y.frac),
            x.frac * (1.0 - y.frac),
            (1.0 - x.frac) * y.frac,
            x.frac * y.frac,
        ),
    );
}

// The phase of positional-encoding wave `wave` along one axis of texel `x` of a
// `mip_side`-texel mip whose pair's coarse grid has `coarse_side` texels, as two
// numerators over the denominator 4 · mip_side: the phase p = u · coarse_side · 2^wave
// (u = (x + ½) / mip_side) modulo 1, and p + ¼ modulo 1. Integer arithmetic, so the
// phase is exact: p = 2 (2x + 1) · coarse_side · 2^wave / (4 · mip_side). Every factor is
// reduced modulo the denominator (≤ 65536) first, so no product overflows u32.
fn ntc_pe_phase(x: u32, mip_side: u32, coarse_side: u32, wave: u32) -> vec2u {
    let den = 4u * mip_side;
    let a = (4u * x + 2u) % den;
    let b = (coarse_side << wave) % den;
    let p = (a * b) % den;
    return vec2u(p, (p + mip_side) % den);
}

// model::triangle_wave of the phase num / den: |4 · frac − 2| − 1.
fn ntc_triangle(num: u32, den: u32) -> f32 {
    return abs(4.0 * (f32(num) / f32(den)) - 2.0) - 1.0;
}

// model::positional_encoding of texel (x, y) of a `mip_size` mip for wave `wave`:
// tri(px), tri(py), tri(px + ¼), tri(py + ¼).
fn ntc_positional_encoding(texel: vec2u, mip_size: vec2u, coarse_size: vec2u, wave: u32) -> vec4f {
    let px = ntc_pe_phase(texel.x, mip_size.x, coarse_size.x, wave);
    let py = ntc_pe_phase(texel.y, mip_size.y, coarse_size.y, wave);
    let dx = 4u * mip_size.x;
    let dy = 4u * mip_size.y;
    return vec4f(
        ntc_triangle(px.x, dx),
        ntc_triangle(py.x, dy),
        ntc_triangle(px.y, dx),
        ntc_triangle(py.y, dy),
    );
}
