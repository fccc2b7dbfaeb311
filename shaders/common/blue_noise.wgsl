// Blue-noise samples for the stochastic passes (NTC mip and texel choice).
//
// The texture is render::blue_noise::BlueNoise: BLUE_NOISE_SIZE² texels of R32Float
// holding (rank + ½) / BLUE_NOISE_SIZE², a void-and-cluster ranking the project generates
// itself (Ulichney's method, toroidal Gaussian energy with σ = 1.5 texels). So within one
// tile every value occurs once, and texels close on the torus hold distant values: the
// pattern has almost no low-frequency power and tiles without seams. Bind it as an
// unfilterable float texture; it is read with textureLoad only.
//
// Channels: channel c reads the tile shifted by c · (49, 37) texels, the R2 sequence's
// step (0.7549, 0.5698) scaled to the tile and rounded to odd integers, so every channel
// offset is distinct along each axis and channels 0–15 lie at least 12 texels apart on the
// torus (8 σ of the energy kernel: no correlation left between them).
//
// Frames: channel c of frame f adds f · α_c modulo 1, an integer Weyl sequence in 24-bit
// fixed point (the products wrap modulo 2³² on purpose). Channels 0–2 use the three
// components of the R3 sequence's step (α = 1/ψ, 1/ψ², 1/ψ³, ψ ≈ 1.2207 the root of
// x⁴ = x + 1), so one pixel's (ξ0, ξ1, ξ2) over frames is jointly low-discrepancy — the
// stochastic trilinear filter converges to the trilinear average at every pixel, not only
// on average over pixels; further channels reuse them. Every frame, a rotation of the
// tile's values modulo 1 per channel, stays blue in space.

const BLUE_NOISE_SIZE: u32 = 64u;

// round(2³² · α_c) for the R3 step.
const BLUE_NOISE_WEYL = array<u32, 3>(3518319155u, 2882110345u, 2360945575u);

// A sample in [0, 1) for `pixel`, `frame` and `channel`.
fn blue_noise(noise: texture_2d<f32>, pixel: vec2u, frame: u32, channel: u32) -> f32 {
    let offset = vec2u(channel * 49u, channel * 37u);
    // 2³² is a multiple of the tile, so wrapping additions keep the toroidal position.
    let p = (pixel + offset) % BLUE_NOISE_SIZE;
    let v = textureLoad(noise, vec2i(p), 0).x;
    // frame · α_c mod 1 as a 24-bit fixed-point fraction.
    // The step chosen with `select` (indexing the constant array with a variable would
    // make a local-memory copy of it).
    let c = channel % 3u;
    let step = select(select(BLUE_NOISE_WEYL[2], BLUE_NOISE_WEYL[1], c == 1u), BLUE_NOISE_WEYL[0], c == 0u);
    let weyl = f32((frame * step) >> 8u) * (1.0 / 16777216.0);
    return fract(v + weyl);
}
