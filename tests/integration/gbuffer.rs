//! The visibility G-buffer (lavapipe in CI): the resolve pass against its CPU reference
//! `resolve_texel` (f64) on the ids and depth the visibility raster wrote, and the two
//! G-buffer modes against each other on the toy shop (targets and final image).
//!
//! Whether the adapter runs the visibility G-buffer is checked on the shared context
//! ([`visibility_available`]): where it does not, the tests check that asking for it is
//! the clear error instead, and say so on stderr.

use glam::{DVec3, DVec4, Vec3};
use neurotex::gpu::read_texture;
use neurotex::open::{OpenedScene, open, select_camera};
use neurotex::render::gpu_types::MaterialData;
use neurotex::render::headless::render_frame;
use neurotex::render::passes::gbuffer_resolve::{ResolvedTexel, TexelInputs, resolve_texel};
use neurotex::render::scene_gpu::{SceneGeometry, UploadOptions};
use neurotex::render::{
    Aov, FrameSettings, GBufferMode, RenderError, RenderMode, Renderer, VisibilityUnsupported,
};
use neurotex::screen::material_word::{MATERIAL_ID_MASK, NO_MATERIAL};

use crate::common::{ctx, read_motion};

/// Whether the shared adapter runs the visibility G-buffer. When it does not, checks
/// that a renderer refuses it with [`RenderError::Visibility`] and reports why.
pub fn visibility_available() -> bool {
    let ctx = ctx();
    match GBufferMode::Visibility.check(ctx) {
        Ok(()) => {
            assert!(ctx.granted.primitive_index);
            true
        }
        Err(e) => {
            let scene = open(None).expect("built-in toy shop");
            let mut renderer = crate::common::renderer(
                &scene.scene,
                &UploadOptions {
                    max_texture_size: Some(16),
                    ..UploadOptions::default()
                },
                (8, 8),
            );
            assert_eq!(renderer.gbuffer_mode(), GBufferMode::Raster);
            let err = renderer
                .set_gbuffer_mode(ctx, GBufferMode::Visibility)
                .expect_err("visibility must be refused");
            assert!(matches!(
                err,
                RenderError::Visibility(VisibilityUnsupported { .. })
            ));
            eprintln!(
                "adapter `{}` cannot run the visibility G-buffer ({e}): only its error was tested",
                ctx.info.name
            );
            false
        }
    }
}

/// The toy shop (16² textures) with a renderer of `size` in `mode`.
fn toyshop_renderer(mode: GBufferMode, size: (u32, u32)) -> (OpenedScene, Renderer) {
    let opened = open(Some(&crate::render::toyshop(16))).expect("toy shop");
    let upload = UploadOptions {
        gbuffer: Some(mode),
        ..UploadOptions::default()
    };
    let renderer = crate::common::renderer(&opened.scene, &upload, size);
    assert_eq!(renderer.gbuffer_mode(), mode);
    (opened, renderer)
}

/// Two frames of the scene's camera, the second moved and turned a little (so that motion
/// is not zero); the settings of the second.
fn two_frames(opened: &OpenedScene, renderer: &mut Renderer) -> FrameSettings {
    let camera = select_camera(opened, None).expect("camera");
    let mut settings = FrameSettings {
        camera,
        lighting: opened.description.lighting,
        aov: Aov::Final,
        mode: RenderMode::Reference,
        passes: Default::default(),
    };
    render_frame(ctx(), renderer, &settings).expect("first frame");
    settings.camera.position += Vec3::new(0.05, 0.02, -0.03);
    settings.camera.forward = (settings.camera.forward + Vec3::new(0.02, 0.0, 0.0)).normalize();
    settings
}

/// Every G-buffer target read back.
struct Readback {
    normal_tangent: Vec<f32>,
    uv: Vec<f32>,
    uv_grad: Vec<f32>,
    material: Vec<u32>,
    motion: Vec<[f32; 2]>,
    depth: Vec<f32>,
}

fn read_gbuffer(renderer: &Renderer) -> Readback {
    let g = &renderer.targets().gbuffer;
    let f32s = |t: &wgpu::Texture| read_texture(ctx(), t, 0, 0).unwrap().to_f32().unwrap();
    Readback {
        normal_tangent: f32s(&g.normal_tangent.texture),
        uv: f32s(&g.uv.texture),
        uv_grad: f32s(&g.uv_grad.texture),
        material: read_texture(ctx(), &g.material.texture, 0, 0)
            .unwrap()
            .to_u32()
            .unwrap(),
        motion: read_motion(&g.motion.texture),
        depth: f32s(&g.depth.texture),
    }
}

#[test]
fn gbuffer_resolve_matches_cpu_reference() {
    if !visibility_available() {
        return;
    }
    let ctx = ctx();
    let size = (96, 64);
    let (opened, mut renderer) = toyshop_renderer(GBufferMode::Visibility, size);
    let settings = two_frames(&opened, &mut renderer);
    // The uniform the second frame records with (its previous camera is the first's).
    let uniform = renderer.frame_uniform(&settings);
    render_frame(ctx, &mut renderer, &settings).expect("second frame");
    let g = read_gbuffer(&renderer);
    let ids = read_texture(
        ctx,
        &renderer
            .targets()
            .gbuffer
            .ids
            .as_ref()
            .expect("ids")
            .texture,
        0,
        0,
    )
    .unwrap()
    .to_u32()
    .unwrap();
    let geometry = SceneGeometry::build(&opened.scene);
    let materials = MaterialData::table(&opened.scene.materials);

    let mut covered = 0;
    let mut moving = 0;
    let mut outliers = Vec::new();
    for py in 0..size.1 {
        for px in 0..size.0 {
            let i = (py * size.0 + px) as usize;
            let at = format!("({px},{py})");
            if g.depth[i] <= 0.0 {
                assert_eq!(g.material[i], NO_MATERIAL, "material word at {at}");
                assert_eq!(g.motion[i], [0.0; 2], "motion at {at}");
                continue;
            }
            let (instance, triangle) = (ids[i * 2], ids[i * 2 + 1]);
            let inst = &geometry.instances[instance as usize];
            let inputs = TexelInputs {
                frame: &uniform,
                instance: inst,
                material: &materials[inst.material as usize],
                triangle: geometry
                    .triangle(instance, triangle)
                    .unwrap_or_else(|| panic!("ids ({instance}, {triangle}) out of range at {at}")),
            };
            let want = resolve_texel(&inputs, (px, py));
            assert_eq!(
                g.material[i] & MATERIAL_ID_MASK,
                want.material & MATERIAL_ID_MASK,
                "material id at {at}"
            );
            covered += 1;
            moving += usize::from(want.motion != [0.0; 2]);
            let texel = Texel::of(&g, i);
            if let Err(e) = texel.matches(&want, &CPU_TOLERANCE) {
                outliers.push(format!("{e} at {at}"));
            }
        }
    }
    let pixels = (size.0 * size.1) as usize;
    assert!(covered > pixels / 4, "only {covered} pixels with geometry");
    assert!(moving > covered / 2, "only {moving} moving pixels");
    assert_few_outliers(&outliers, covered);
}

/// At most one in 500 of the `covered` pixels may be outside the tolerance (sliver and
/// grazing triangles); prints how many were.
fn assert_few_outliers(outliers: &[String], covered: usize) {
    eprintln!(
        "{} of {covered} pixels outside the tolerance",
        outliers.len()
    );
    assert!(
        outliers.len() <= covered / 500,
        "{} of {covered} pixels outside the tolerance:\n{}",
        outliers.len(),
        outliers.join("\n")
    );
}

/// How far a G-buffer texel may be from another's.
struct Tolerance {
    /// UV error in pixels: |Δuv| ≤ px · (|d uv/dx| + |d uv/dy|) + 1e-6 (rounding of the
    /// barycentrics moves the sample point, and UV changes by its derivative per pixel).
    uv_px: f64,
    /// |Δ uv_grad| ≤ rel · |uv_grad| + 1e-6, as 4-vectors.
    grad_rel: f64,
    /// Angle between the decoded normals and between the decoded tangents, radians.
    angle: f64,
    /// Motion: |Δ| ≤ rel · |motion| + abs per component (f16 storage).
    motion: (f64, f64),
}

/// The GPU resolve (f32) against its f64 reference. Pixels of sliver or grazing triangles,
/// where the barycentrics' normalisation is ill-conditioned in f32, may exceed it; the
/// test allows that in 0.2% of the covered pixels.
const CPU_TOLERANCE: Tolerance = Tolerance {
    uv_px: 2e-3,
    grad_rel: 1e-2,
    angle: 4e-3,
    motion: (2e-3, 2e-5),
};

/// One texel as read back.
struct Texel {
    normal_tangent: [f64; 4],
    uv: [f64; 2],
    uv_grad: [f64; 4],
    material: u32,
    motion: [f64; 2],
}

impl Texel {
    fn of(g: &Readback, i: usize) -> Self {
        let f = |v: &[f32], n: usize, c: usize| f64::from(v[i * n + c]);
        Self {
            normal_tangent: std::array::from_fn(|c| f(&g.normal_tangent, 4, c)),
            uv: std::array::from_fn(|c| f(&g.uv, 2, c)),
            uv_grad: std::array::from_fn(|c| f(&g.uv_grad, 4, c)),
            material: g.material[i],
            motion: g.motion[i].map(f64::from),
        }
    }

    fn from_resolved(r: &ResolvedTexel) -> Self {
        Self {
            normal_tangent: r.normal_tangent,
            uv: r.uv,
            uv_grad: r.uv_grad,
            material: r.material,
            motion: r.motion,
        }
    }

    /// Whether `self` is within `tol` of `want` (its error otherwise).
    fn matches(&self, want: &ResolvedTexel, tol: &Tolerance) -> Result<(), String> {
        let want = Texel::from_resolved(want);
        if self.material != want.material {
            return Err(format!(
                "material word {:#x}, want {:#x}",
                self.material, want.material
            ));
        }
        for c in 0..2 {
            let err = (self.motion[c] - want.motion[c]).abs();
            if err > tol.motion.0 * want.motion[c].abs() + tol.motion.1 {
                return Err(format!("motion {:?}, want {:?}", self.motion, want.motion));
            }
            let per_px = want.uv_grad[c].abs() + want.uv_grad[c + 2].abs();
            if (self.uv[c] - want.uv[c]).abs() > tol.uv_px * per_px + 1e-6 {
                return Err(format!("uv {:?}, want {:?}", self.uv, want.uv));
            }
        }
        let (g, w) = (DVec4::from(self.uv_grad), DVec4::from(want.uv_grad));
        if (g - w).length() > tol.grad_rel * w.length() + 1e-6 {
            return Err(format!("uv_grad {g}, want {w}"));
        }
        for k in [0, 2] {
            let decode = |t: &Texel| oct_decode(t.normal_tangent[k], t.normal_tangent[k + 1]);
            let angle = decode(self).angle_between(decode(&want));
            if angle > tol.angle {
                let what = if k == 0 { "normal" } else { "tangent" };
                return Err(format!("{what} off by {angle} rad"));
            }
        }
        Ok(())
    }
}

/// The unit vector of an octahedral encoding (`oct_decode` in `shaders/common/math.wgsl`).
fn oct_decode(x: f64, y: f64) -> DVec3 {
    let mut n = DVec3::new(x, y, 1.0 - x.abs() - y.abs());
    let t = (-n.z).max(0.0);
    n.x += if n.x >= 0.0 { -t } else { t };
    n.y += if n.y >= 0.0 { -t } else { t };
    n.normalize()
}

/// The visibility G-buffer reproduces the raster one. Coverage and depth come from the
/// same vertex transform and raster state, so depth and the material word agree exactly
/// at every pixel, edges included (no edge allowance is needed: both modes rasterise the
/// same triangles with the same positions), and UV, normal + tangent and motion at the
/// pixel centre to rounding ([`RASTER_TOLERANCE`]: the rasteriser snaps positions to its
/// sub-pixel grid, the resolve interpolates the exact ones; as against the CPU reference,
/// 0.2 % of the pixels, on grazing triangles, may exceed it). The UV derivatives are the
/// same differences across the 2×2 quad when the raster's are fine derivatives; where they
/// are coarse ones (one row or column for the whole quad) they differ by one pixel's change
/// of the derivative, a perspective term: each pixel within 10 %, 99 % of them within 1 %.
/// The final image (whose mip choice follows the derivatives) by a small mean and maximum.
#[test]
fn gbuffer_visibility_matches_raster() {
    if !visibility_available() {
        return;
    }
    let size = (128, 72);
    let mut frames = Vec::new();
    for mode in GBufferMode::ALL {
        let (opened, mut renderer) = toyshop_renderer(mode, size);
        let settings = two_frames(&opened, &mut renderer);
        let frame = render_frame(ctx(), &mut renderer, &settings).expect("second frame");
        frames.push((read_gbuffer(&renderer), frame.rgba8));
    }
    let [(raster, raster_rgba), (vis, vis_rgba)] = &frames[..] else {
        unreachable!()
    };
    assert_eq!(raster.depth, vis.depth, "depth");
    assert_eq!(raster.material, vis.material, "material words");
    let mut grad_errors = Vec::new();
    let mut outliers = Vec::new();
    for i in 0..raster.material.len() {
        let at = (i % size.0 as usize, i / size.0 as usize);
        if raster.material[i] == NO_MATERIAL {
            assert_eq!(vis.motion[i], [0.0; 2], "motion at {at:?}");
            continue;
        }
        let r = Texel::of(raster, i);
        let as_wanted = ResolvedTexel {
            normal_tangent: r.normal_tangent,
            uv: r.uv,
            uv_grad: r.uv_grad,
            material: r.material,
            motion: r.motion,
        };
        let v = Texel::of(vis, i);
        if let Err(e) = v.matches(&as_wanted, &RASTER_TOLERANCE) {
            outliers.push(format!("{e} at {at:?}"));
        }
        let (rg, vg) = (DVec4::from(r.uv_grad), DVec4::from(v.uv_grad));
        grad_errors.push((rg - vg).length() / rg.length().max(1e-6));
    }
    let covered = grad_errors.len();
    assert!(
        covered > raster.material.len() / 4,
        "too few pixels covered"
    );
    assert_few_outliers(&outliers, covered);
    grad_errors.sort_by(f64::total_cmp);
    let p99 = grad_errors[grad_errors.len() * 99 / 100];
    eprintln!(
        "relative UV-derivative difference: 99th percentile {p99:.2e}, max {:.2e}",
        grad_errors[grad_errors.len() - 1]
    );
    assert!(
        p99 < 1e-2,
        "UV derivatives: 99th percentile difference {p99}"
    );

    let diffs: Vec<u32> = raster_rgba
        .iter()
        .zip(vis_rgba)
        .map(|(a, b)| u32::from(a.abs_diff(*b)))
        .collect();
    let mean = diffs.iter().sum::<u32>() as f64 / diffs.len() as f64;
    let max = diffs.iter().copied().max().unwrap_or(0);
    eprintln!("final image: mean difference {mean:.4}, max {max} (of 255)");
    assert!(
        mean < 0.05 && max <= 4,
        "final images differ: mean {mean}, max {max}"
    );
}

/// The visibility G-buffer against the raster one (see the test below it).
const RASTER_TOLERANCE: Tolerance = Tolerance {
    uv_px: 4e-3,
    grad_rel: 0.1,
    angle: 1e-2,
    motion: (2e-3, 2e-5),
};
