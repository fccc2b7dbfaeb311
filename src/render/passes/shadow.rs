//! Sun shadow pass: the depth of every draw seen from the sun, through an orthographic
//! projection that encloses the whole scene ([`light_clip_from_world`]). The lighting
//! pass samples it with 3×3 bilinear PCF.
//!
//! One fixed map over the scene's bounding sphere: simple and stable under camera motion
//! (no cascades), at the price of resolution in large scenes (a 40 m street at 2048²
//! gets ≈ 3 cm texels).
//!
//! The map depends on nothing the camera does: only on the sun (through the light's
//! clip transform), whether shadows are on, the scene's draws (fixed for a renderer) and
//! the alpha masks of the material textures bound (the originals, or an NTC package's
//! baked textures). So the map is state of the pass, kept across frames like the
//! temporal history (not in the frame's targets, which a frame writes before it reads):
//! the pass draws it only when one of those inputs differs from the map's last drawing,
//! and a frame with the same sun reuses it: on an H200 that saves the ≈ 1 ms of raster
//! work the street's map takes at 2048² (a frame without a drawing has no `shadow`
//! timing).

use glam::{Mat4, Vec3};

use crate::gpu::Defines;
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout;
use crate::gpu::{GpuContext, ShaderError};
use crate::render::passes::scene_draw::{SceneDraw, SceneDrawDesc, SceneInputs};
use crate::render::targets::{Target, format};
use crate::scene::Aabb;

/// Side of the shadow map in texels.
pub const SHADOW_MAP_SIZE: u32 = 2048;

/// World → the sun's orthographic clip space for a scene with `bounds`: the eye sits
/// outside the bounding sphere on the sun's side; depth 0 is nearest the sun.
pub fn light_clip_from_world(bounds: &Aabb, sun_direction: Vec3) -> Mat4 {
    let center = bounds.center();
    let r = bounds.radius().max(1e-3);
    let dir = sun_direction.normalize_or(Vec3::Y);
    let up = if dir.y.abs() > 0.99 { Vec3::Z } else { Vec3::Y };
    let view = glam::camera::rh::view::look_to_mat4(center + dir * (2.0 * r), -dir, up);
    let proj = glam::camera::rh::proj::directx::orthographic(-r, r, -r, r, r * 0.5, r * 3.5);
    proj * view
}

/// Shader parameters of the shadow lookup: (enabled, 1/size, normal offset, depth bias).
pub fn shadow_params(bounds: &Aabb, enabled: bool) -> [f32; 4] {
    let r = bounds.radius().max(1e-3);
    let texel = 2.0 * r / SHADOW_MAP_SIZE as f32;
    // Depth spans 3r; a bias of ~1.5 texels of depth slope at 45°.
    let depth_bias = 1.5 * texel / (3.0 * r);
    [
        f32::from(u8::from(enabled)),
        1.0 / SHADOW_MAP_SIZE as f32,
        1.5 * texel,
        depth_bias,
    ]
}

/// What a shadow map was drawn from: a map drawn from equal inputs is the same map.
#[derive(Debug)]
struct Drawn {
    /// World → the sun's clip space ([`light_clip_from_world`]).
    light_clip_from_world: [[f32; 4]; 4],
    /// Whether the scene was drawn (shadows on) or the map only cleared.
    enabled: bool,
    /// The material textures the alpha-tested draws read.
    materials: Vec<wgpu::BindGroup>,
}

/// The shadow pass and its map.
#[derive(Debug)]
pub struct ShadowPass {
    draw: SceneDraw,
    /// The sun's shadow map ([`SHADOW_MAP_SIZE`]² [`format::SHADOW`]), kept across frames.
    map: Target,
    /// The inputs of the map as last drawn (`None`: never).
    drawn: Option<Drawn>,
}

impl ShadowPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "shadow";

    /// Build the pipelines.
    pub fn new(
        ctx: &GpuContext,
        material_layout: &wgpu::BindGroupLayout,
    ) -> Result<Self, ShaderError> {
        let desc = SceneDrawDesc {
            label: Self::LABEL,
            shader: "shadow.wgsl",
            defines: &Defines::new(),
            targets: &[],
            depth: wgpu::DepthStencilState {
                bias: wgpu::DepthBiasState {
                    constant: 0,
                    slope_scale: 1.5,
                    clamp: 0.0,
                },
                ..layout::depth_test(format::SHADOW, true, wgpu::CompareFunction::LessEqual)
            },
            // Both faces: open meshes (leaves, signs, single walls) must cast shadows too.
            single_sided_cull: None,
            opaque_fragment: false,
        };
        Ok(Self {
            draw: SceneDraw::new(ctx, &desc, material_layout)?,
            map: Target::new(
                &ctx.device,
                "shadow.map",
                (SHADOW_MAP_SIZE, SHADOW_MAP_SIZE),
                format::SHADOW,
                wgpu::TextureUsages::empty(),
            ),
            drawn: None,
        })
    }

    /// The shadow map, as the last recorded frame left it (what lighting reads).
    pub fn map(&self) -> &Target {
        &self.map
    }

    /// Record the pass into the map for the sun's `light_clip_from_world` (the frame
    /// uniform's): clear it and, when `enabled`, draw the scene from the sun — unless the
    /// map already holds that drawing (same sun, setting and material textures), in
    /// which case nothing is recorded. Returns whether the pass was recorded.
    pub fn record(
        &mut self,
        frame: &mut FrameEncoder<'_>,
        inputs: &SceneInputs<'_>,
        enabled: bool,
        light_clip_from_world: [[f32; 4]; 4],
    ) -> bool {
        let same = self.drawn.as_ref().is_some_and(|d| {
            d.light_clip_from_world == light_clip_from_world
                && d.enabled == enabled
                && d.materials == inputs.materials
        });
        if same {
            return false;
        }
        self.drawn = Some(Drawn {
            light_clip_from_world,
            enabled,
            materials: inputs.materials.to_vec(),
        });
        let bind_group = self.draw.bind_group(frame.device(), inputs);
        let depth = layout::depth_attachment(
            &self.map.view,
            wgpu::LoadOp::Clear(1.0),
            wgpu::StoreOp::Store,
        );
        frame.render_pass(Self::LABEL, &[], depth, |pass| {
            if enabled {
                self.draw.draw(pass, &bind_group, inputs);
            }
        });
        true
    }
}
