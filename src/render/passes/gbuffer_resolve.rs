//! Visibility G-buffer resolve: a compute pass that rebuilds the G-buffer's normal +
//! tangent, UV, UV derivatives, material word and motion from the (instance slot,
//! triangle) ids and depth that the `VISIBILITY` variant of the G-buffer pass rasterised
//! (`shaders/gbuffer_resolve.wgsl`). A thread per pixel in 8×8 workgroups fetches its
//! triangle from the scene's vertex and index buffers (bound as storage), transforms it as
//! the vertex shader does and interpolates with perspective-correct barycentrics at the
//! pixel centre and at its horizontal and vertical neighbours in its 2×2 quad: the UV
//! derivatives are the differences across the quad's row and column, as the raster
//! path's (fine) `dpdx`/`dpdy` take them, so both modes agree to rounding where the raster
//! derivatives are fine ones. The encodings are the raster path's, from the shared
//! `shaders/common/surface.wgsl`.
//!
//! [`resolve_texel`] is its CPU reference, in f64.

use crate::gpu::Defines;
use glam::{DMat3, DMat4, DVec2, DVec3, DVec4};

use crate::gpu::GpuContext;
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, KernelError, workgroups};
use crate::render::gpu_types::{FrameUniform, InstanceData, MaterialData};
use crate::render::scene_gpu::SceneGpu;
use crate::render::targets::{GBuffer, Target};
use crate::scene::Vertex;
use crate::screen::material_word::{BITANGENT_NEGATIVE, NO_MATERIAL};

/// Side of the compute workgroup in pixels (`@workgroup_size(8, 8)` in the shader).
pub const WORKGROUP_SIZE: u32 = 8;

/// `f32` words of one [`Vertex`] (the shader's `VERTEX_FLOATS`).
pub const VERTEX_FLOATS: usize = std::mem::size_of::<Vertex>() / 4;

/// What the resolve reads.
#[derive(Clone, Copy, Debug)]
pub struct ResolveInputs<'a> {
    /// The frame uniform.
    pub frame: &'a wgpu::Buffer,
    /// Vertices, indices, instances and material constants.
    pub scene: &'a SceneGpu,
    /// The visibility raster's (instance slot, triangle) ids ([`format::VISIBILITY_IDS`](crate::render::targets::format::VISIBILITY_IDS)).
    pub ids: &'a Target,
    /// Its depth.
    pub depth: &'a Target,
}

/// The resolve pass.
#[derive(Debug)]
pub struct GBufferResolvePass {
    kernel: ComputeKernel,
}

impl GBufferResolvePass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "gbuffer_resolve";

    /// Build the pipeline.
    pub fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let kernel = ComputeKernel::new(
            ctx,
            &KernelDesc::new(Self::LABEL, "gbuffer_resolve.wgsl", "resolve")
                .with_defines(&Defines::new().with("VERTEX_FLOATS", VERTEX_FLOATS)),
        )?;
        Ok(Self { kernel })
    }

    /// Record the pass: every target of `gbuffer` but depth and ids, which must have
    /// storage usage ([`crate::render::targets::GBufferMode::Visibility`]), from `inputs`.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &ResolveInputs<'_>,
        gbuffer: &GBuffer,
    ) {
        let view = wgpu::BindingResource::TextureView;
        let scene = inputs.scene;
        let resources = &[
            (0, inputs.frame.as_entire_binding()),
            (1, scene.instance_buffer.as_entire_binding()),
            (2, scene.material_buffer.as_entire_binding()),
            (3, scene.vertex_buffer.as_entire_binding()),
            (4, scene.index_buffer.as_entire_binding()),
            (5, view(&inputs.ids.view)),
            (6, view(&inputs.depth.view)),
            (7, view(&gbuffer.normal_tangent.view)),
            (8, view(&gbuffer.uv.view)),
            (9, view(&gbuffer.uv_grad.view)),
            (10, view(&gbuffer.material.view)),
            (11, view(&gbuffer.motion.view)),
        ];
        let groups = workgroups(inputs.depth.size(), WORKGROUP_SIZE);
        self.kernel.run(frame, resources, groups);
    }
}

/// One resolved G-buffer texel, before the targets' rounding (f16 for normal + tangent,
/// UV derivatives and motion; f32 for UV).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResolvedTexel {
    /// Octahedral world normal (xy) and tangent (zw).
    pub normal_tangent: [f64; 4],
    /// Material UV.
    pub uv: [f64; 2],
    /// d(uv)/dx, d(uv)/dy per pixel.
    pub uv_grad: [f64; 4],
    /// Material id | bitangent sign bit ([`NO_MATERIAL`] without geometry).
    pub material: u32,
    /// Screen-UV offset to where the surface was last frame.
    pub motion: [f64; 2],
}

impl ResolvedTexel {
    /// A pixel without geometry: no material, no motion (the other targets undefined).
    pub const NONE: Self = Self {
        normal_tangent: [0.0; 4],
        uv: [0.0; 2],
        uv_grad: [0.0; 4],
        material: NO_MATERIAL,
        motion: [0.0; 2],
    };
}

/// What one pixel's resolve reads besides its ids: the frame, the pixel's instance and
/// material, and its triangle's vertices.
#[derive(Clone, Copy, Debug)]
pub struct TexelInputs<'a> {
    /// The frame uniform (matrices, viewport).
    pub frame: &'a FrameUniform,
    /// The pixel's instance slot.
    pub instance: &'a InstanceData,
    /// The instance's material.
    pub material: &'a MaterialData,
    /// The triangle's corners, in index-buffer order.
    pub triangle: [&'a Vertex; 3],
}

/// One transformed corner.
struct Corner {
    clip: DVec4,
    prev_clip: DVec4,
    normal: DVec3,
    tangent: DVec4,
    uv: DVec2,
}

fn mat4(m: &[[f32; 4]; 4]) -> DMat4 {
    DMat4::from_cols_array_2d(&m.map(|c| c.map(f64::from)))
}

fn vec3(v: [f32; 3]) -> DVec3 {
    DVec3::from(v.map(f64::from))
}

fn corner(inputs: &TexelInputs<'_>, v: &Vertex) -> Corner {
    let world_from_local = mat4(&inputs.instance.world_from_local);
    let normal_from_local = DMat3::from_mat4(mat4(&inputs.instance.normal_from_local));
    let world = world_from_local * vec3(v.position).extend(1.0);
    let m = inputs.material;
    let [c0x, c0y, c1x, c1y] = m.uv_c0_c1.map(f64::from);
    let [c2x, c2y, _, _] = m.uv_c2.map(f64::from);
    let (u, w) = (f64::from(v.uv[0]), f64::from(v.uv[1]));
    let t = DVec4::from(v.tangent.map(f64::from));
    Corner {
        clip: mat4(&inputs.frame.clip_from_world) * world,
        prev_clip: mat4(&inputs.frame.prev_clip_from_world) * world,
        normal: normal_from_local * vec3(v.normal),
        tangent: (DMat3::from_mat4(world_from_local) * t.truncate()).extend(t.w),
        uv: DVec2::new(c0x * u + c1x * w + c2x, c0y * u + c1y * w + c2y),
    }
}

/// Perspective-correct barycentrics of the point of the plane of the corners with
/// homogeneous rows `a`, `b`, `c` seen at `ndc` (as the shader's `barycentrics`).
fn barycentrics(a: DVec3, b: DVec3, c: DVec3, ndc: DVec2) -> DVec3 {
    let p = ndc.extend(1.0);
    let l = DVec3::new(p.dot(b.cross(c)), p.dot(c.cross(a)), p.dot(a.cross(b)));
    l / (l.x + l.y + l.z)
}

/// The octahedral encoding of a unit vector (`oct_encode` in `shaders/common/math.wgsl`).
fn oct_encode(n: DVec3) -> DVec2 {
    let p = DVec2::new(n.x, n.y) / (n.x.abs() + n.y.abs() + n.z.abs());
    if n.z >= 0.0 {
        p
    } else {
        let sign = |x: f64| if x >= 0.0 { 1.0 } else { -1.0 };
        (DVec2::ONE - DVec2::new(p.y.abs(), p.x.abs())) * DVec2::new(sign(p.x), sign(p.y))
    }
}

/// The CPU reference of the resolve of pixel `pixel` (in a frame of `inputs.frame`'s
/// viewport) whose visibility ids name `inputs`' instance and triangle: what the pass
/// writes there, in f64 (see [`ResolvedTexel`]).
pub fn resolve_texel(inputs: &TexelInputs<'_>, pixel: (u32, u32)) -> ResolvedTexel {
    let [v0, v1, v2] = inputs.triangle.map(|v| corner(inputs, v));
    // The corners' homogeneous (x, y, w) rows.
    let xyw = |c: DVec4| DVec3::new(c.x, c.y, c.w);
    let (a, b, c) = (xyw(v0.clip), xyw(v1.clip), xyw(v2.clip));
    // Counter-clockwise in NDC is the front face, whatever the signs of the w's; a
    // mirrored instance reverses it.
    let mirrored = DMat3::from_mat4(mat4(&inputs.instance.world_from_local)).determinant() < 0.0;
    let front = (a.dot(b.cross(c)) > 0.0) != mirrored;
    let viewport = inputs.frame.viewport;
    let step = DVec2::new(2.0 / f64::from(viewport[0]), 2.0 / f64::from(viewport[1]));
    let ndc = DVec2::new(
        (f64::from(pixel.0) + 0.5) * step.x - 1.0,
        1.0 - (f64::from(pixel.1) + 0.5) * step.y,
    );
    // The quad neighbour: +1 px from the left column / top row, −1 px from the others.
    let toward = |c: u32| if c & 1 == 1 { -1.0 } else { 1.0 };
    let (tx, ty) = (toward(pixel.0), toward(pixel.1));
    let l = barycentrics(a, b, c, ndc);
    let lx = barycentrics(a, b, c, ndc + DVec2::new(tx * step.x, 0.0));
    let ly = barycentrics(a, b, c, ndc - DVec2::new(0.0, ty * step.y));
    let uv_at = |l: DVec3| l.x * v0.uv + l.y * v1.uv + l.z * v2.uv;
    let uv = uv_at(l);
    let (uv_dx, uv_dy) = ((uv_at(lx) - uv) * tx, (uv_at(ly) - uv) * ty);

    let mut n = (l.x * v0.normal + l.y * v1.normal + l.z * v2.normal).normalize();
    let tangent = l.x * v0.tangent + l.y * v1.tangent + l.z * v2.tangent;
    let t = tangent.truncate() - n * n.dot(tangent.truncate());
    let t = if t.length_squared() > 1e-12 {
        t.normalize()
    } else {
        DVec3::new(n.z, n.x, n.y)
    };
    let mut sign_negative = tangent.w < 0.0;
    if !front {
        n = -n;
        sign_negative = !sign_negative;
    }
    let cur = l.x * v0.clip + l.y * v1.clip + l.z * v2.clip;
    let prev = l.x * v0.prev_clip + l.y * v1.prev_clip + l.z * v2.prev_clip;
    let project = |c: DVec4| DVec2::new(c.x, c.y) / c.w;
    let motion = (project(prev) - project(cur)) * DVec2::new(0.5, -0.5);
    let (no, to) = (oct_encode(n), oct_encode(t));
    ResolvedTexel {
        normal_tangent: [no.x, no.y, to.x, to.y],
        uv: uv.to_array(),
        uv_grad: [uv_dx.x, uv_dx.y, uv_dy.x, uv_dy.y],
        material: inputs.instance.material | if sign_negative { BITANGENT_NEGATIVE } else { 0 },
        motion: motion.to_array(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::{ShaderHeader, shader_source};

    #[test]
    fn vertex_floats_match_the_shader_default() {
        let header = ShaderHeader::parse(shader_source("gbuffer_resolve.wgsl").unwrap()).unwrap();
        let default = header.defaults.get("VERTEX_FLOATS");
        assert_eq!(default, Some(VERTEX_FLOATS.to_string().as_str()));
    }

    #[test]
    fn barycentrics_interpolate_corners_and_sum_to_one() {
        // A triangle with corners at different depths (w): perspective-correct weights
        // reproduce each corner at its projection and sum to one everywhere.
        let a = DVec3::new(-1.0, -1.0, 1.0);
        let b = DVec3::new(2.0, -2.0, 2.0);
        let c = DVec3::new(0.0, 4.0, 4.0);
        for (corner, want) in [(a, DVec3::X), (b, DVec3::Y), (c, DVec3::Z)] {
            let ndc = DVec2::new(corner.x / corner.z, corner.y / corner.z);
            let l = barycentrics(a, b, c, ndc);
            assert!((l - want).length() < 1e-12, "{l:?} at {ndc:?}");
        }
        let l = barycentrics(a, b, c, DVec2::new(0.1, 0.2));
        assert!((l.x + l.y + l.z - 1.0).abs() < 1e-12);
        // The point with these weights in clip space projects back to the pixel.
        let p = l.x * a + l.y * b + l.z * c;
        assert!((p.x / p.z - 0.1).abs() < 1e-12 && (p.y / p.z - 0.2).abs() < 1e-12);
    }
}
