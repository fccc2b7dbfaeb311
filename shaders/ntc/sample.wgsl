// defines: GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0
// variants: - | FIXED_POINT_GRADIENTS
//
// NTC training, kernel 1: draw the step's batch. One thread per sample: a texel uniform
// over all texels of all colour mips of all materials of the group, so a material is
// chosen in proportion to the texel count of its mip chain and a mip in proportion to its
// area. Sample i of step s hashes to h = pcg(i ^ pcg(s ^ pcg(sample_seed))); the texel is
// the high 32 bits of h · total_texels (every texel gets ⌊2^32 / total⌋ or one more of
// the 2^32 hash values, a bias below total / 2^32).

#import "common/ntc_encoding.wgsl"
#import "common/ntc_train.wgsl"

const SAMPLE_WORKGROUP: u32 = 256u;

// High 32 bits of the 64-bit product a · b, from 16-bit halves (WGSL has no u64).
fn mul_hi(a: u32, b: u32) -> u32 {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let lo_hi = a_lo * b_hi;
    let hi_lo = a_hi * b_lo;
    // < 2^16 + 2^16 + (2^16 − 1)^2 < 2^32: no overflow.
    let cross = ((a_lo * b_lo) >> 16u) + (hi_lo & 0xffffu) + lo_hi;
    return a_hi * b_hi + (hi_lo >> 16u) + (cross >> 16u);
}

@compute @workgroup_size(SAMPLE_WORKGROUP)
fn sample(
    @builtin(workgroup_id) workgroup: vec3u,
    @builtin(num_workgroups) workgroups: vec3u,
    @builtin(local_invocation_index) local: u32,
) {
    let index = linear_workgroup(workgroup, workgroups) * SAMPLE_WORKGROUP + local;
    if index >= step_params.batch_size || step_params.entry_count == 0u {
        return;
    }
    let h = pcg_hash(index ^ pcg_hash(step_params.step ^ pcg_hash(step_params.sample_seed)));
    let texel = mul_hi(h, step_params.total_texels);
    // Largest entry whose first texel is ≤ texel (texel_start increases with the entry).
    var lo = 0u;
    var hi = step_params.entry_count;
    while hi - lo > 1u {
        let mid = (lo + hi) / 2u;
        if mips[mid].texel_start <= texel {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let entry = mips[lo];
    let local_texel = min(texel - entry.texel_start, entry.width * entry.height - 1u);
    let x = local_texel % entry.width;
    let y = local_texel / entry.width;
    batch[index] = vec2u(lo, x | (y << 16u));
}
