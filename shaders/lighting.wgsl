// Lighting pass: GGX / height-correlated Smith specular + Lambert diffuse under one
// directional sun (shadowed by the sun's shadow map, 3×3 bilinear PCF), a two-colour
// hemisphere ambient scaled by occlusion, and emissive.
// One compute thread per pixel (8×8 workgroups): reads depth, the material targets and the
// shadow map, writes linear HDR radiance through a storage view. Background pixels get a
// sky gradient.

#import "common/math.wgsl"
#import "common/frame.wgsl"

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var depth_tex: texture_depth_2d;
@group(0) @binding(2) var mat_base_color: texture_2d<f32>;
@group(0) @binding(3) var mat_normal_rm: texture_2d<f32>;
@group(0) @binding(4) var mat_emissive_ao: texture_2d<f32>;
@group(0) @binding(5) var shadow_map: texture_depth_2d;
@group(0) @binding(6) var shadow_sampler: sampler_comparison;
@group(0) @binding(7) var hdr_out: texture_storage_2d<rgba16float, write>;

fn d_ggx(n_h: f32, a: f32) -> f32 {
    let a2 = a * a;
    let d = n_h * n_h * (a2 - 1.0) + 1.0;
    return a2 / (PI * d * d);
}

// Height-correlated Smith visibility V = G / (4 n·l n·v).
fn v_smith_ggx_correlated(n_v: f32, n_l: f32, a: f32) -> f32 {
    let a2 = a * a;
    let gv = n_l * sqrt(n_v * n_v * (1.0 - a2) + a2);
    let gl = n_v * sqrt(n_l * n_l * (1.0 - a2) + a2);
    return 0.5 / max(gv + gl, 1e-6);
}

fn f_schlick(f0: vec3f, v_h: f32) -> vec3f {
    return f0 + (vec3f(1.0) - f0) * pow(1.0 - v_h, 5.0);
}

// Analytic approximation of the split-sum environment BRDF (Karis 2014, mobile).
fn env_brdf_approx(f0: vec3f, roughness: f32, n_v: f32) -> vec3f {
    let c0 = vec4f(-1.0, -0.0275, -0.572, 0.022);
    let c1 = vec4f(1.0, 0.0425, 1.04, -0.04);
    let r = roughness * c0 + c1;
    let a004 = min(r.x * r.x, exp2(-9.28 * n_v)) * r.x + r.y;
    let ab = vec2f(-1.04, 1.04) * a004 + r.zw;
    return f0 * ab.x + ab.y;
}

// Fraction of the sun visible from `world` (normal `n`): 1 lit, 0 in shadow.
fn sun_visibility(world: vec3f, n: vec3f) -> f32 {
    if frame.shadow_params.x == 0.0 {
        return 1.0;
    }
    // Normal offset against acne on surfaces nearly parallel to the sun.
    let c = frame.light_clip_from_world * vec4f(world + n * frame.shadow_params.z, 1.0);
    let ndc = c.xyz / c.w;
    let uv = vec2f(ndc.x * 0.5 + 0.5, 0.5 - ndc.y * 0.5);
    if any(uv < vec2f(0.0)) || any(uv > vec2f(1.0)) || ndc.z > 1.0 {
        return 1.0;
    }
    let depth = ndc.z - frame.shadow_params.w;
    var lit = 0.0;
    for (var y = -1; y <= 1; y++) {
        for (var x = -1; x <= 1; x++) {
            let o = vec2f(f32(x), f32(y)) * frame.shadow_params.y;
            lit += textureSampleCompareLevel(shadow_map, shadow_sampler, uv + o, depth);
        }
    }
    return lit / 9.0;
}

fn sky(dir: vec3f) -> vec3f {
    let t = clamp(dir.y * 0.5 + 0.5, 0.0, 1.0);
    return mix(frame.ground_radiance.rgb, frame.sky_radiance.rgb, t);
}

// The radiance of pixel `p`, whose centre lies at screen UV `uv`.
fn radiance(p: vec2i, uv: vec2f) -> vec3f {
    let depth = textureLoad(depth_tex, p, 0);
    let ndc = vec2f(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0);
    if depth <= 0.0 {
        // Reversed-Z clear value: nothing was drawn here.
        let far = frame.world_from_clip * vec4f(ndc, 1e-7, 1.0);
        let dir = normalize(far.xyz / far.w - frame.camera_position.xyz);
        return sky(dir);
    }
    let world4 = frame.world_from_clip * vec4f(ndc, depth, 1.0);
    let world = world4.xyz / world4.w;
    let base = textureLoad(mat_base_color, p, 0);
    let nrm = textureLoad(mat_normal_rm, p, 0);
    let eao = textureLoad(mat_emissive_ao, p, 0);
    var n = oct_decode(nrm.xy);
    let v = normalize(frame.camera_position.xyz - world);
    let roughness = clamp(nrm.z, 0.045, 1.0);
    let metallic = clamp(nrm.w, 0.0, 1.0);
    let a = roughness * roughness;
    let albedo = base.rgb;
    let f0 = mix(vec3f(0.04), albedo, metallic);
    let diffuse_color = albedo * (1.0 - metallic);
    let n_v = max(dot(n, v), 1e-4);

    let l = frame.sun_direction.xyz;
    let h = normalize(l + v);
    let n_l = clamp(dot(n, l), 0.0, 1.0);
    let n_h = clamp(dot(n, h), 0.0, 1.0);
    let v_h = clamp(dot(v, h), 0.0, 1.0);
    let spec = f_schlick(f0, v_h) * (d_ggx(n_h, a) * v_smith_ggx_correlated(n_v, n_l, a));
    var direct = vec3f(0.0);
    if n_l > 0.0 {
        let visibility = sun_visibility(world, n);
        direct = (diffuse_color * INV_PI + spec) * frame.sun_irradiance.rgb * (n_l * visibility);
    }

    let irradiance = mix(frame.ground_radiance.rgb, frame.sky_radiance.rgb, n.y * 0.5 + 0.5);
    let r = reflect(-v, n);
    let ambient = (diffuse_color * irradiance + env_brdf_approx(f0, roughness, n_v) * sky(r)) * eao.w;
    return direct + ambient + eao.rgb;
}

@compute @workgroup_size(8, 8)
fn light(@builtin(global_invocation_id) gid: vec3u) {
    let size = textureDimensions(hdr_out);
    if any(gid.xy >= size) {
        return;
    }
    let uv = (vec2f(gid.xy) + 0.5) / vec2f(size);
    textureStore(hdr_out, vec2i(gid.xy), vec4f(radiance(vec2i(gid.xy), uv), 1.0));
}
