// defines: PEAK_ITERS=1024, PEAK_F32
// variants: PEAK_F32 | PEAK_F16, F16 | PEAK_COPY | PEAK_COOP, F16, COOP | PEAK_COOP, F16, COOP, PEAK_COOP_F32
//
// The adapter's peaks for `neurotex bench decode` (src/bench_decode.rs, whose
// `peak_reference` is the CPU reference of the FMA chains), 256 invocations per workgroup:
//   PEAK_F32   16 independent f32 FMA chains per invocation, PEAK_ITERS steps each
//              (unrolled with `#for`: an array indexed by a loop counter lives in local
//              memory); the sum of the chains goes to dst[invocation].x
//   PEAK_F16   the same with 16 vec2<f16> chains (packed pairs, 4 FLOP per step and
//              chain); dst[invocation].x = the f32 of the sum's x
//   PEAK_COOP  per subgroup 4 independent 16×16×16 f16 multiply-adds per step (f16
//              accumulators; PEAK_COOP_F32: f32), PEAK_ITERS steps; one element of the
//              sum goes to dst
//   PEAK_COPY  copies src to dst, one vec4<u32> per invocation
// Chain k of invocation i starts at seed + k, seed = (src[i % 16].x & 255) / 256, and steps
// acc ← fma(acc, 0.999 + seed · 1e-6, 1e-3 · seed) (f16: 0.999 + seed · 1e-4, seed · 1e-3).

#ifdef F16
enable f16;
#endif
#ifdef COOP
enable wgpu_cooperative_matrix;
#endif

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

#ifdef PEAK_COOP
var<workgroup> tile: array<f16, 256>;
#ifdef PEAK_COOP_F32
alias Acc = coop_mat16x16<f32, C>;
var<workgroup> out_tile: array<f32, 256>;
#else
alias Acc = coop_mat16x16<f16, C>;
var<workgroup> out_tile: array<f16, 256>;
#endif
#endif

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) groups: vec3u) {
    let index = id.x + id.y * groups.x * 256u;
#ifdef PEAK_COPY
    if index < arrayLength(&src) {
        dst[index] = src[index];
    }
#endif
#ifdef PEAK_F32
    let seed = f32(src[index % 16u].x & 255u) * (1.0 / 256.0);
#for K in 0..16
    var acc_${K} = seed + f32(${K});
#endfor
    let m = 0.999 + seed * 1e-6;
    let a = 1e-3 * seed;
    for (var i = 0u; i < ${PEAK_ITERS}u; i++) {
#for K in 0..16
        acc_${K} = fma(acc_${K}, m, a);
#endfor
    }
    var s = 0.0;
#for K in 0..16
    s += acc_${K};
#endfor
    if index < arrayLength(&dst) {
        dst[index] = vec4u(bitcast<u32>(s), 0u, 0u, 0u);
    }
#endif
#ifdef PEAK_F16
    let seed = f16(src[index % 16u].x & 255u) * 0.00390625h;
#for K in 0..16
    var acc_${K} = vec2<f16>(seed + f16(${K}));
#endfor
    let m = vec2<f16>(0.999h + seed * 0.0001h);
    let a = vec2<f16>(seed * 0.001h);
    for (var i = 0u; i < ${PEAK_ITERS}u; i++) {
#for K in 0..16
        acc_${K} = fma(acc_${K}, m, a);
#endfor
    }
    var s = vec2<f16>(0.0h);
#for K in 0..16
    s += acc_${K};
#endfor
    if index < arrayLength(&dst) {
        dst[index] = vec4u(bitcast<u32>(f32(s.x)), 0u, 0u, 0u);
    }
#endif
#ifdef PEAK_COOP
    tile[li] = f16(src[li % 16u].x & 7u) * 0.125h;
    workgroupBarrier();
    let a = coopLoadT<coop_mat16x16<f16, A>>(&tile[0], 16u);
    let b = coopLoad<coop_mat16x16<f16, B>>(&tile[0], 16u);
    var c0 = Acc();
    var c1 = Acc();
    var c2 = Acc();
    var c3 = Acc();
    for (var i = 0u; i < ${PEAK_ITERS}u; i++) {
        c0 = coopMultiplyAdd(a, b, c0);
        c1 = coopMultiplyAdd(a, b, c1);
        c2 = coopMultiplyAdd(a, b, c2);
        c3 = coopMultiplyAdd(a, b, c3);
    }
    let r = c0 + c1 + c2 + c3;
    // Every subgroup stores the same values.
    coopStoreT(r, &out_tile[0], 16u);
    workgroupBarrier();
    if index < arrayLength(&dst) {
        dst[index] = vec4u(bitcast<u32>(f32(out_tile[li])), 0u, 0u, 0u);
    }
#endif
}
