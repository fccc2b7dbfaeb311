//! GPU tests of the renderer (one binary, one adapter: lavapipe in CI): the G-buffer
//! against CPU expectations on a tiny analytic scene, and tiny golden images.

use std::path::{Path, PathBuf};

use glam::{Mat4, Vec2, Vec3};
use neurotex::gpu::read_texture;
use neurotex::render::headless::render_frame;
use neurotex::render::scene_gpu::UploadOptions;
use neurotex::render::{Aov, FrameSettings, GBufferMode};
use neurotex::scene::{Aabb, Camera, Instance, Lighting, Material, Mesh, Primitive, Scene, Vertex};

use crate::common::{ctx, read_motion};

/// A 2×2 quad in the z = 0 plane facing +Z, split at x = 0 into two primitives with
/// materials 0 (left) and 1 (right). u = (x+1)/2, v = (1−y)/2; tangent +X, w = −1
/// (v runs along −Y).
fn two_material_quad() -> Scene {
    let vertex = |x: f32, y: f32| Vertex {
        position: [x, y, 0.0],
        normal: [0.0, 0.0, 1.0],
        tangent: [1.0, 0.0, 0.0, -1.0],
        uv: [(x + 1.0) / 2.0, (1.0 - y) / 2.0],
    };
    let half = |x0: f32, x1: f32, material| Primitive {
        vertices: vec![
            vertex(x0, -1.0),
            vertex(x1, -1.0),
            vertex(x1, 1.0),
            vertex(x0, 1.0),
        ],
        indices: vec![0, 1, 2, 0, 2, 3],
        material,
    };
    Scene {
        source: PathBuf::from("two_material_quad"),
        meshes: vec![Mesh {
            name: "quad".into(),
            primitives: vec![half(-1.0, 0.0, 0), half(0.0, 1.0, 1)],
        }],
        instances: vec![Instance {
            mesh: 0,
            world_from_local: Mat4::IDENTITY,
        }],
        materials: vec![
            Material {
                name: "left".into(),
                base_color_factor: [1.0, 0.0, 0.0, 1.0],
                ..Default::default()
            },
            Material {
                name: "right".into(),
                base_color_factor: [0.0, 0.0, 1.0, 1.0],
                roughness_factor: 0.25,
                metallic_factor: 0.0,
                ..Default::default()
            },
        ],
        cameras: vec![],
        bounds: Aabb {
            min: Vec3::new(-1.0, -1.0, 0.0),
            max: Vec3::new(1.0, 1.0, 0.0),
        },
        warnings: vec![],
        buffers: vec![],
    }
}

fn oct_encode(n: Vec3) -> Vec2 {
    let p = Vec2::new(n.x, n.y) / (n.x.abs() + n.y.abs() + n.z.abs());
    if n.z >= 0.0 {
        p
    } else {
        let s = Vec2::new(
            if p.x >= 0.0 { 1.0 } else { -1.0 },
            if p.y >= 0.0 { 1.0 } else { -1.0 },
        );
        (Vec2::ONE - Vec2::new(p.y.abs(), p.x.abs())) * s
    }
}

#[test]
fn gbuffer_matches_cpu_expectations() {
    gbuffer_matches_cpu_expectations_in(GBufferMode::Raster);
}

#[test]
fn gbuffer_visibility_matches_cpu_expectations() {
    if crate::gbuffer::visibility_available() {
        gbuffer_matches_cpu_expectations_in(GBufferMode::Visibility);
    }
}

fn gbuffer_matches_cpu_expectations_in(mode: GBufferMode) {
    let ctx = ctx();
    let scene = two_material_quad();
    const N: u32 = 32;
    // 90° vertical field of view from z = 2: the view spans [-2, 2]², the quad the middle half.
    let camera = Camera {
        name: "test".into(),
        position: Vec3::new(0.0, 0.0, 2.0),
        forward: -Vec3::Z,
        yfov: 90f32.to_radians(),
        znear: 0.1,
    };
    let upload = UploadOptions {
        gbuffer: Some(mode),
        ..UploadOptions::default()
    };
    let mut renderer = crate::common::renderer(&scene, &upload, (N, N));
    assert_eq!(renderer.gbuffer_mode(), mode);
    let settings = FrameSettings {
        camera,
        lighting: Lighting::default(),
        aov: Aov::Final,
        mode: neurotex::render::RenderMode::Reference,
        passes: Default::default(),
    };
    render_frame(ctx, &mut renderer, &settings).unwrap();
    let g = &renderer.targets().gbuffer;
    let floats = |t: &wgpu::Texture| read_texture(ctx, t, 0, 0).unwrap().to_f32().unwrap();
    let material = read_texture(ctx, &g.material.texture, 0, 0)
        .unwrap()
        .to_u32()
        .unwrap();
    let uv = floats(&g.uv.texture);
    let grad = floats(&g.uv_grad.texture);
    let nt = floats(&g.normal_tangent.texture);
    let motion = read_motion(&g.motion.texture);
    let depth = floats(&g.depth.texture);
    let base = floats(&renderer.targets().materials.base_color.texture);

    let n_oct = oct_encode(Vec3::Z);
    let t_oct = oct_encode(Vec3::X);
    let mut covered = 0;
    for py in 0..N {
        for px in 0..N {
            let i = (py * N + px) as usize;
            // Pixel centre → world point on z = 0.
            let x = ((px as f32 + 0.5) / N as f32 * 2.0 - 1.0) * 2.0;
            let y = (1.0 - (py as f32 + 0.5) / N as f32 * 2.0) * 2.0;
            let inside = x.abs() < 1.0 && y.abs() < 1.0;
            let word = material[i];
            if !inside {
                assert_eq!(word, u32::MAX, "background at ({px},{py})");
                assert_eq!(depth[i], 0.0);
                assert_eq!(motion[i], [0.0, 0.0], "no motion without geometry");
                continue;
            }
            covered += 1;
            let id = word & 0xFFFFF;
            assert_eq!(id, if x < 0.0 { 0 } else { 1 }, "material at ({px},{py})");
            assert_ne!(word & 0x8000_0000, 0, "bitangent sign bit (w = −1)");
            let (u, v) = ((x + 1.0) / 2.0, (1.0 - y) / 2.0);
            assert!(
                (uv[i * 2] - u).abs() < 1e-4 && (uv[i * 2 + 1] - v).abs() < 1e-4,
                "uv at ({px},{py})"
            );
            // du/dx = 1/2 · 4/N per pixel, dv/dy = +1/2 · 4/N (screen y down), cross terms 0.
            let step = 2.0 / N as f32;
            let want = [step, 0.0, 0.0, step];
            for c in 0..4 {
                assert!(
                    (grad[i * 4 + c] - want[c]).abs() < 2e-4,
                    "uv grad {c} at ({px},{py}): {}",
                    grad[i * 4 + c]
                );
            }
            for (c, w) in [n_oct.x, n_oct.y, t_oct.x, t_oct.y].into_iter().enumerate() {
                assert!(
                    (nt[i * 4 + c] - w).abs() < 1e-3,
                    "normal/tangent {c} at ({px},{py})"
                );
            }
            assert_eq!(motion[i], [0.0, 0.0], "first frame has no motion");
            // Reversed-Z infinite projection: depth = near / view distance = 0.1 / 2.
            assert!((depth[i] - 0.05).abs() < 1e-5, "depth {}", depth[i]);
            // The reference pass wrote the material's constant base colour (linear).
            let want_base = if x < 0.0 {
                [1.0, 0.0, 0.0]
            } else {
                [0.0, 0.0, 1.0]
            };
            for c in 0..3 {
                assert!(
                    (base[i * 4 + c] - want_base[c]).abs() < 1e-3,
                    "base colour at ({px},{py})"
                );
            }
        }
    }
    assert_eq!(covered, (N / 2 * N / 2) as usize);

    // A second frame after moving the camera right by 0.4 m: static geometry moves left
    // on screen, so the previous position is to the right: motion.x = +0.4/4 in screen UV.
    let mut moved = settings.clone();
    moved.camera.position.x += 0.4;
    render_frame(ctx, &mut renderer, &moved).unwrap();
    let motion = read_motion(&renderer.targets().gbuffer.motion.texture);
    let centre = ((N / 2) * N + N / 2) as usize;
    assert!(
        (motion[centre][0] - 0.1).abs() < 1e-3,
        "motion.x {}",
        motion[centre][0]
    );
    assert!(motion[centre][1].abs() < 1e-3);
}

pub fn toyshop(texture_size: u32) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "neurotex-render-toyshop-{}-{texture_size}",
        std::process::id()
    ));
    let opts = neurotex::builtin::toyshop::ToyshopOptions {
        texture_size,
        ..Default::default()
    };
    neurotex::builtin::toyshop::generate(&dir, &opts).expect("generate toy shop")
}

fn render_png(
    scene_path: &Path,
    size: (u32, u32),
    aov: Aov,
    max_texture_size: Option<u32>,
) -> Vec<u8> {
    let ctx = ctx();
    let opened = neurotex::open::open(Some(scene_path)).unwrap();
    let camera = neurotex::open::select_camera(&opened, None).unwrap();
    let upload = UploadOptions {
        allow_missing_textures: false,
        max_texture_size,
        anisotropy: None,
        gbuffer: None,
    };
    let mut renderer = crate::common::renderer(&opened.scene, &upload, size);
    let settings = FrameSettings {
        camera,
        lighting: opened.description.lighting,
        aov,
        mode: neurotex::render::RenderMode::Reference,
        passes: Default::default(),
    };
    render_frame(ctx, &mut renderer, &settings).unwrap().rgba8
}

#[test]
fn golden_toyshop_final() {
    let rgba = render_png(&toyshop(16), (128, 72), Aov::Final, None);
    crate::common::assert_golden("toyshop_final_128x72", 128, 72, &rgba);
}

#[test]
fn golden_living_room_albedo() {
    let scene = Path::new("scenes/living_room.toml");
    let rgba = render_png(scene, (128, 72), Aov::Albedo, Some(32));
    crate::common::assert_golden("living_room_albedo_128x72", 128, 72, &rgba);
}

/// The shadow map is drawn when the sun or the setting differs from its last drawing and
/// reused otherwise; the reused and redrawn maps are the maps a fresh renderer draws.
#[test]
fn the_shadow_map_is_drawn_again_only_when_the_sun_or_the_setting_changes() {
    use neurotex::render::passes::shadow::ShadowPass;
    let ctx = ctx();
    let opened = neurotex::open::open(Some(&toyshop(16))).unwrap();
    let camera = neurotex::open::select_camera(&opened, None).unwrap();
    let size = (48, 32);
    let mut settings = FrameSettings {
        camera,
        lighting: opened.description.lighting,
        aov: Aov::Final,
        mode: neurotex::render::RenderMode::Reference,
        passes: Default::default(),
    };
    settings.lighting.shadows = true;
    let upload = UploadOptions::default();
    let mut renderer = crate::common::renderer(&opened.scene, &upload, size);
    let shadow_map = |r: &neurotex::render::Renderer| {
        read_texture(ctx, &r.shadow_map().texture, 0, 0)
            .unwrap()
            .to_f32()
            .unwrap()
    };
    // What a renderer that has drawn nothing before draws for `s`.
    let fresh = |s: &FrameSettings| {
        let mut r = crate::common::renderer(&opened.scene, &upload, size);
        render_frame(ctx, &mut r, s).unwrap();
        shadow_map(&r)
    };
    let mut frame = |s: &FrameSettings| {
        let f = render_frame(ctx, &mut renderer, s).unwrap();
        let timed = !f.timings.is_empty();
        let drew = f.timings.iter().any(|t| t.label == ShadowPass::LABEL);
        (timed.then_some(drew), shadow_map(&renderer))
    };
    let (drew, first) = frame(&settings);
    assert_ne!(drew, Some(false), "the first frame draws the map");
    assert!(
        first.iter().any(|&d| d < 1.0),
        "the map holds the scene's depth"
    );
    let (drew, again) = frame(&settings);
    assert_ne!(drew, Some(true), "an unchanged sun reuses the map");
    assert_eq!(again, first);

    let sun = settings.lighting.sun_direction;
    settings.lighting.sun_direction = [sun[0] + 0.4, sun[1], sun[2] - 0.3];
    let (drew, moved) = frame(&settings);
    assert_ne!(drew, Some(false), "a moved sun draws the map again");
    assert_ne!(moved, first);
    assert_eq!(moved, fresh(&settings));

    settings.lighting.shadows = false;
    let (drew, off) = frame(&settings);
    assert_ne!(drew, Some(false), "switching shadows off clears the map");
    assert!(off.iter().all(|&d| d == 1.0));

    settings.lighting.shadows = true;
    settings.lighting.sun_direction = sun;
    let (drew, back) = frame(&settings);
    assert_ne!(drew, Some(false));
    assert_eq!(back, first);
}
