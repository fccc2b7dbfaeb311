//! A small, generic glTF 2.0 writer for the procedural built-in scenes.
//!
//! Owns [`GltfBuilder`], which accumulates meshes (positions, normals, UVs as `f32`,
//! `u32` indices), PBR metallic-roughness materials with external image references,
//! a node hierarchy and perspective cameras, and writes `<name>.gltf` (JSON) plus one
//! `<name>.bin` buffer next to it, both through [`write_atomic`] so that no reader ever
//! sees a half-written file. It also owns the shape helpers that produce [`MeshData`]
//! (box, UV sphere, cylinder, cone, torus, plane).
//!
//! Conventions: y-up, metres, counter-clockwise front faces, glTF UVs (origin top-left,
//! v down). Shapes are centred on the origin. Angles inside the shape helpers go through
//! [`sin_cos_turns`], so the same call produces the same bytes on every platform. The
//! builder never encodes images; it only references them by relative URI.

use std::path::{Path, PathBuf};

use glam::{Mat3, Mat4, Quat, Vec3};
use serde_json::{Map, Value, json};

use super::procedural::sin_cos_turns;
use crate::io::write_atomic;
use crate::scene::AlphaMode;

/// Errors raised while writing a glTF file. Every variant names the file involved.
#[derive(Debug, thiserror::Error)]
pub enum GltfWriteError {
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The accumulated document is inconsistent (bad index, malformed mesh data, ...).
    #[error("{path}: invalid glTF content: {reason}")]
    Invalid {
        /// The file that was about to be written.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Triangle-list geometry of one primitive: per-vertex positions, normals and UVs plus
/// `u32` indices (counter-clockwise front faces).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeshData {
    /// Positions (metres).
    pub positions: Vec<[f32; 3]>,
    /// Unit normals.
    pub normals: Vec<[f32; 3]>,
    /// Texture coordinates (glTF: origin top-left, v down).
    pub uvs: Vec<[f32; 2]>,
    /// Triangle list indices.
    pub indices: Vec<u32>,
}

impl MeshData {
    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    /// Appends `other`, offsetting its indices.
    pub fn append(&mut self, other: &MeshData) {
        let base = u32::try_from(self.positions.len()).expect("mesh exceeds u32 vertices");
        self.positions.extend_from_slice(&other.positions);
        self.normals.extend_from_slice(&other.normals);
        self.uvs.extend_from_slice(&other.uvs);
        self.indices.extend(other.indices.iter().map(|i| i + base));
    }

    /// Bakes `m` into the data: positions are transformed, normals use the inverse
    /// transpose, and the winding is flipped when `m` mirrors.
    pub fn transform(&mut self, m: Mat4) {
        let linear = Mat3::from_mat4(m);
        let normal_matrix = linear.inverse().transpose();
        for p in &mut self.positions {
            *p = m.transform_point3(Vec3::from(*p)).to_array();
        }
        for n in &mut self.normals {
            *n = (normal_matrix * Vec3::from(*n))
                .normalize_or_zero()
                .to_array();
        }
        if linear.determinant() < 0.0 {
            for tri in self.indices.chunks_exact_mut(3) {
                tri.swap(1, 2);
            }
        }
    }

    /// [`MeshData::transform`] by value, for chaining.
    pub fn transformed(mut self, m: Mat4) -> Self {
        self.transform(m);
        self
    }

    /// Axis-aligned bounds of the positions, `None` when empty.
    pub fn bounds(&self) -> Option<([f32; 3], [f32; 3])> {
        let first = *self.positions.first()?;
        Some(
            self.positions
                .iter()
                .fold((first, first), |(mut lo, mut hi), p| {
                    for k in 0..3 {
                        lo[k] = lo[k].min(p[k]);
                        hi[k] = hi[k].max(p[k]);
                    }
                    (lo, hi)
                }),
        )
    }

    /// Checks that the attribute arrays agree, the indices form triangles inside the
    /// vertex range and every value is finite.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.positions.len();
        if n == 0 || self.indices.is_empty() {
            return Err("empty mesh".into());
        }
        if self.normals.len() != n || self.uvs.len() != n {
            return Err(format!(
                "{n} positions but {} normals and {} uvs",
                self.normals.len(),
                self.uvs.len()
            ));
        }
        if !self.indices.len().is_multiple_of(3) {
            return Err(format!(
                "{} indices is not a triangle list",
                self.indices.len()
            ));
        }
        if let Some(i) = self.indices.iter().find(|&&i| i as usize >= n) {
            return Err(format!("index {i} out of range for {n} vertices"));
        }
        let finite = self.positions.iter().flatten().all(|x| x.is_finite())
            && self.normals.iter().flatten().all(|x| x.is_finite())
            && self.uvs.iter().flatten().all(|x| x.is_finite());
        if !finite {
            return Err("non-finite vertex data".into());
        }
        Ok(())
    }

    /// Adds a vertex and returns its index.
    fn vertex(&mut self, p: Vec3, n: Vec3, uv: [f32; 2]) -> u32 {
        let i = u32::try_from(self.positions.len()).expect("mesh exceeds u32 vertices");
        self.positions.push(p.to_array());
        self.normals.push(n.to_array());
        self.uvs.push(uv);
        i
    }

    /// Adds a planar quad centred at `center` with outward normal `n`; `right` and `down`
    /// are the unit directions in which u and v grow, `half` the half extents along them
    /// and `uv` the rectangle `[u0, v0, u1, v1]` it maps to.
    fn quad(
        &mut self,
        center: Vec3,
        n: Vec3,
        right: Vec3,
        down: Vec3,
        half: [f32; 2],
        uv: [f32; 4],
    ) {
        let r = right * half[0];
        let d = down * half[1];
        let a = self.vertex(center - r - d, n, [uv[0], uv[1]]);
        let b = self.vertex(center - r + d, n, [uv[0], uv[3]]);
        let c = self.vertex(center + r + d, n, [uv[2], uv[3]]);
        let e = self.vertex(center + r - d, n, [uv[2], uv[1]]);
        self.indices.extend_from_slice(&[a, b, c, a, c, e]);
    }
}

/// How the shape helpers lay out texture coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UvMode {
    /// UVs in metres times this factor, so a tiling texture that covers `1 / factor`
    /// metres appears at its real-world density. Around closed curves (sphere, cylinder,
    /// cone and torus rings) the repeat count is rounded to a whole number (at least 1)
    /// so the seam is invisible.
    PerMetre(f32),
    /// Each box face, and each curved surface, maps to the whole `[0, 1]²` square
    /// (labels, atlas cells, beach-ball gores).
    Unit,
}

impl UvMode {
    /// UV extent of a straight run of `metres`.
    fn span(self, metres: f32) -> f32 {
        match self {
            UvMode::PerMetre(k) => metres * k,
            UvMode::Unit => 1.0,
        }
    }

    /// UV extent once around a closed curve of length `metres` (whole repeats).
    fn around(self, metres: f32) -> f32 {
        match self {
            UvMode::PerMetre(k) => (metres * k).round().max(1.0),
            UvMode::Unit => 1.0,
        }
    }

    fn rect(self, width: f32, height: f32) -> [f32; 4] {
        [0.0, 0.0, self.span(width), self.span(height)]
    }
}

/// An axis-aligned box of the given full `size`, centred on the origin, with 24 vertices
/// (flat normals). Faces come in the order +X, −X, +Y, −Y, +Z, −Z (vertices `4f..4f+4`).
/// Side faces are upright (v grows downwards in world −Y); the top face has u along +X
/// and v along +Z.
pub fn box_mesh(size: Vec3, uv: UvMode) -> MeshData {
    let h = size * 0.5;
    let mut m = MeshData::default();
    // (normal, right, down, half extents along right/down)
    let faces = [
        (Vec3::X, Vec3::NEG_Z, Vec3::NEG_Y, [h.z, h.y]),
        (Vec3::NEG_X, Vec3::Z, Vec3::NEG_Y, [h.z, h.y]),
        (Vec3::Y, Vec3::X, Vec3::Z, [h.x, h.z]),
        (Vec3::NEG_Y, Vec3::X, Vec3::NEG_Z, [h.x, h.z]),
        (Vec3::Z, Vec3::X, Vec3::NEG_Y, [h.x, h.y]),
        (Vec3::NEG_Z, Vec3::NEG_X, Vec3::NEG_Y, [h.x, h.y]),
    ];
    for (n, right, down, half) in faces {
        let center = n * (n.abs().dot(h));
        m.quad(
            center,
            n,
            right,
            down,
            half,
            uv.rect(2.0 * half[0], 2.0 * half[1]),
        );
    }
    m
}

/// A horizontal rectangle in the XZ plane facing +Y, `width` along X and `depth` along Z,
/// centred on the origin (u along +X, v along +Z).
pub fn plane(width: f32, depth: f32, uv: UvMode) -> MeshData {
    let mut m = MeshData::default();
    m.quad(
        Vec3::ZERO,
        Vec3::Y,
        Vec3::X,
        Vec3::Z,
        [width * 0.5, depth * 0.5],
        uv.rect(width, depth),
    );
    m
}

/// A point on the unit circle in the XZ plane at `t` turns: `(sin, 0, cos)`, so angles
/// grow from +Z towards +X (u grows to the right seen from outside).
fn ring_dir(t: f32) -> Vec3 {
    let (s, c) = sin_cos_turns(t);
    Vec3::new(s, 0.0, c)
}

/// A UV sphere of `radius` with `segments` around the Y axis and `rings` from pole to pole.
/// u runs around (seam at +Z), v from the north pole (0) to the south pole.
pub fn uv_sphere(radius: f32, segments: u32, rings: u32, uv: UvMode) -> MeshData {
    let segments = segments.max(3);
    let rings = rings.max(2);
    let circumference = std::f32::consts::TAU * radius;
    let (su, sv) = (uv.around(circumference), uv.span(circumference * 0.5));
    let mut m = MeshData::default();
    for i in 0..=rings {
        let v = i as f32 / rings as f32;
        let (sin_t, cos_t) = sin_cos_turns(v * 0.5);
        for j in 0..=segments {
            let u = j as f32 / segments as f32;
            let d = ring_dir(u) * sin_t + Vec3::Y * cos_t;
            m.vertex(d * radius, d, [u * su, v * sv]);
        }
    }
    let row = segments + 1;
    for i in 0..rings {
        for j in 0..segments {
            let a = i * row + j;
            let b = a + row;
            let (c, d) = (b + 1, a + 1);
            if i != 0 {
                m.indices.extend_from_slice(&[a, b, c]);
            }
            if i + 1 != rings {
                m.indices.extend_from_slice(&[a, c, d]);
            }
        }
    }
    m
}

/// Adds a flat disc cap at height `y` facing `+Y` (`up`) or `−Y`, with planar UVs
/// (u along +X; v along +Z on top caps, −Z on bottom caps).
fn disc(m: &mut MeshData, radius: f32, y: f32, segments: u32, up: bool, uv: UvMode) {
    let n = if up { Vec3::Y } else { Vec3::NEG_Y };
    let flip = if up { 1.0 } else { -1.0 };
    let s = uv.span(2.0 * radius);
    let center = m.vertex(Vec3::new(0.0, y, 0.0), n, [0.5 * s, 0.5 * s]);
    for j in 0..=segments {
        let d = ring_dir(j as f32 / segments as f32);
        m.vertex(
            d * radius + Vec3::Y * y,
            n,
            [(0.5 + 0.5 * d.x) * s, (0.5 + 0.5 * d.z * flip) * s],
        );
    }
    for j in 0..segments {
        let (a, b) = (center + 1 + j, center + 2 + j);
        if up {
            m.indices.extend_from_slice(&[center, a, b]);
        } else {
            m.indices.extend_from_slice(&[center, b, a]);
        }
    }
}

/// A cylinder around the Y axis from `−height/2` to `+height/2`. The side maps u around
/// and v from top (0) to bottom; `caps` adds flat discs at both ends.
pub fn cylinder(radius: f32, height: f32, segments: u32, caps: bool, uv: UvMode) -> MeshData {
    let segments = segments.max(3);
    let mut m = MeshData::default();
    let hy = height * 0.5;
    let (su, sv) = (uv.around(std::f32::consts::TAU * radius), uv.span(height));
    for j in 0..=segments {
        let u = j as f32 / segments as f32;
        let d = ring_dir(u);
        m.vertex(d * radius + Vec3::Y * hy, d, [u * su, 0.0]);
        m.vertex(d * radius - Vec3::Y * hy, d, [u * su, sv]);
    }
    for j in 0..segments {
        let a = 2 * j;
        let (b, c, d) = (a + 1, a + 3, a + 2);
        m.indices.extend_from_slice(&[a, b, c, a, c, d]);
    }
    if caps {
        disc(&mut m, radius, hy, segments, true, uv);
        disc(&mut m, radius, -hy, segments, false, uv);
    }
    m
}

/// A cone around the Y axis with its base (radius `radius`, capped) at `−height/2` and
/// its apex at `+height/2`. The side maps u around and v from apex (0) to base.
pub fn cone(radius: f32, height: f32, segments: u32, uv: UvMode) -> MeshData {
    let segments = segments.max(3);
    let mut m = MeshData::default();
    let hy = height * 0.5;
    let slant_len = (radius * radius + height * height).sqrt();
    let (su, sv) = (
        uv.around(std::f32::consts::TAU * radius),
        uv.span(slant_len),
    );
    let slant = |t: f32| (ring_dir(t) * height + Vec3::Y * radius).normalize();
    for j in 0..=segments {
        let u = j as f32 / segments as f32;
        m.vertex(ring_dir(u) * radius - Vec3::Y * hy, slant(u), [u * su, sv]);
    }
    for j in 0..segments {
        let u = (j as f32 + 0.5) / segments as f32;
        let apex = m.vertex(Vec3::Y * hy, slant(u), [u * su, 0.0]);
        m.indices.extend_from_slice(&[apex, j, j + 1]);
    }
    disc(&mut m, radius, -hy, segments, false, uv);
    m
}

/// A torus around the Y axis: ring radius `major` in the XZ plane, tube radius `minor`.
/// u runs around the ring, v around the tube (starting on the outside).
pub fn torus(
    major: f32,
    minor: f32,
    major_segments: u32,
    minor_segments: u32,
    uv: UvMode,
) -> MeshData {
    let major_segments = major_segments.max(3);
    let minor_segments = minor_segments.max(3);
    let (su, sv) = (
        uv.around(std::f32::consts::TAU * major),
        uv.around(std::f32::consts::TAU * minor),
    );
    let mut m = MeshData::default();
    for i in 0..=minor_segments {
        let v = i as f32 / minor_segments as f32;
        let (s, c) = sin_cos_turns(v);
        for j in 0..=major_segments {
            let u = j as f32 / major_segments as f32;
            let radial = ring_dir(u);
            let n = radial * c + Vec3::Y * s;
            m.vertex(radial * major + n * minor, n, [u * su, v * sv]);
        }
    }
    let row = major_segments + 1;
    for i in 0..minor_segments {
        for j in 0..major_segments {
            let a = i * row + j;
            let (b, c, d) = (a + row, a + row + 1, a + 1);
            m.indices.extend_from_slice(&[a, c, b, a, d, c]);
        }
    }
    m
}

/// The rotation that turns a glTF camera (looking down −Z, +Y up) to look along
/// `forward` with its up vector as close to `up` as possible.
pub fn look_rotation(forward: Vec3, up: Vec3) -> Quat {
    let f = forward.normalize();
    let mut right = f.cross(up);
    if right.length_squared() < 1e-12 {
        right = f.any_orthonormal_vector();
    }
    let right = right.normalize();
    let true_up = right.cross(f);
    Quat::from_mat3(&Mat3::from_cols(right, true_up, -f)).normalize()
}

/// A PBR metallic-roughness material. Texture fields hold image URIs relative to the
/// `.gltf` file (e.g. `textures/wood_basecolor.png`); the same URI used in several slots
/// or materials is written as one image and one texture.
#[derive(Clone, Debug, PartialEq)]
pub struct MaterialDesc {
    /// Material name.
    pub name: String,
    /// Linear RGBA multiplier of the base colour.
    pub base_color_factor: [f32; 4],
    /// Metallic multiplier.
    pub metallic_factor: f32,
    /// Roughness multiplier.
    pub roughness_factor: f32,
    /// Linear RGB emission.
    pub emissive_factor: [f32; 3],
    /// Alpha interpretation.
    pub alpha_mode: AlphaMode,
    /// Render both faces.
    pub double_sided: bool,
    /// Base colour image (sRGB).
    pub base_color_texture: Option<String>,
    /// Tangent-space normal map image (OpenGL convention).
    pub normal_texture: Option<String>,
    /// Metallic (B) / roughness (G) image.
    pub metallic_roughness_texture: Option<String>,
    /// Occlusion (R) image.
    pub occlusion_texture: Option<String>,
}

impl MaterialDesc {
    /// A material with glTF's default factors (white, metallic 1, roughness 1) and no textures.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            base_color_factor: [1.0; 4],
            metallic_factor: 1.0,
            roughness_factor: 1.0,
            emissive_factor: [0.0; 3],
            alpha_mode: AlphaMode::Opaque,
            double_sided: false,
            base_color_texture: None,
            normal_texture: None,
            metallic_roughness_texture: None,
            occlusion_texture: None,
        }
    }
}

/// A node's local transform.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NodeTransform {
    /// Translation, rotation, scale (applied as T · R · S).
    Trs {
        /// Translation.
        translation: Vec3,
        /// Unit rotation quaternion.
        rotation: Quat,
        /// Non-uniform scale.
        scale: Vec3,
    },
    /// A general column-major matrix.
    Matrix(Mat4),
}

impl NodeTransform {
    /// The identity transform.
    pub const IDENTITY: NodeTransform = NodeTransform::Trs {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
        scale: Vec3::ONE,
    };

    /// A pure translation.
    pub fn translation(t: Vec3) -> Self {
        Self::trs(t, Quat::IDENTITY, Vec3::ONE)
    }

    /// Translation, rotation and scale.
    pub fn trs(translation: Vec3, rotation: Quat, scale: Vec3) -> Self {
        NodeTransform::Trs {
            translation,
            rotation,
            scale,
        }
    }
}

/// A node of the scene hierarchy.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeDesc {
    /// Node name.
    pub name: String,
    /// Local transform.
    pub transform: NodeTransform,
    /// Mesh index returned by [`GltfBuilder::add_mesh`].
    pub mesh: Option<usize>,
    /// Camera index (cameras are normally added with [`GltfBuilder::add_camera`]).
    pub camera: Option<usize>,
    /// Child node indices (each node may have at most one parent).
    pub children: Vec<usize>,
}

impl NodeDesc {
    /// An empty node with the identity transform.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            transform: NodeTransform::IDENTITY,
            mesh: None,
            camera: None,
            children: Vec::new(),
        }
    }
}

/// A perspective camera (infinite far plane, aspect ratio left to the viewer).
#[derive(Clone, Debug, PartialEq)]
struct CameraDesc {
    name: String,
    yfov: f32,
    znear: f32,
}

/// One primitive of a mesh.
#[derive(Clone, Debug)]
struct PrimitiveDesc {
    data: MeshData,
    material: usize,
}

/// A named mesh.
#[derive(Clone, Debug)]
struct MeshDesc {
    name: String,
    primitives: Vec<PrimitiveDesc>,
}

/// Accumulates a glTF document and writes it as `<name>.gltf` + `<name>.bin`.
///
/// Indices returned by the `add_*` methods are the glTF indices of the added items.
/// Nodes that are nobody's child become the roots of the single scene.
#[derive(Clone, Debug, Default)]
pub struct GltfBuilder {
    materials: Vec<MaterialDesc>,
    meshes: Vec<MeshDesc>,
    nodes: Vec<NodeDesc>,
    cameras: Vec<CameraDesc>,
}

/// A JSON number holding the shortest decimal that reads back as the same `f32`.
fn num(x: f32) -> Value {
    format!("{x}")
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn nums(xs: &[f32]) -> Value {
    Value::Array(xs.iter().copied().map(num).collect())
}

impl GltfBuilder {
    /// An empty document.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a material and returns its index.
    pub fn add_material(&mut self, material: MaterialDesc) -> usize {
        self.materials.push(material);
        self.materials.len() - 1
    }

    /// Number of materials added so far.
    pub fn material_count(&self) -> usize {
        self.materials.len()
    }

    /// Adds a mesh with one primitive and returns its index.
    pub fn add_mesh(&mut self, name: &str, data: MeshData, material: usize) -> usize {
        self.add_mesh_primitives(name, vec![(data, material)])
    }

    /// Adds a mesh made of several `(geometry, material index)` primitives and returns
    /// its index.
    pub fn add_mesh_primitives(&mut self, name: &str, primitives: Vec<(MeshData, usize)>) -> usize {
        self.meshes.push(MeshDesc {
            name: name.to_owned(),
            primitives: primitives
                .into_iter()
                .map(|(data, material)| PrimitiveDesc { data, material })
                .collect(),
        });
        self.meshes.len() - 1
    }

    /// Adds a node and returns its index.
    pub fn add_node(&mut self, node: NodeDesc) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Adds a node that places `mesh` with `transform`; returns the node index.
    pub fn add_mesh_node(&mut self, name: &str, mesh: usize, transform: NodeTransform) -> usize {
        self.add_node(NodeDesc {
            mesh: Some(mesh),
            transform,
            ..NodeDesc::new(name)
        })
    }

    /// Adds a group node over existing `children`; returns the node index.
    pub fn add_group(
        &mut self,
        name: &str,
        transform: NodeTransform,
        children: Vec<usize>,
    ) -> usize {
        self.add_node(NodeDesc {
            transform,
            children,
            ..NodeDesc::new(name)
        })
    }

    /// Adds a perspective camera (vertical field of view `yfov` in radians, near plane
    /// `znear` in metres, infinite far plane) and a node named `name` that carries it at
    /// `position` with `rotation` (see [`look_rotation`]). Returns the node index.
    pub fn add_camera(
        &mut self,
        name: &str,
        position: Vec3,
        rotation: Quat,
        yfov: f32,
        znear: f32,
    ) -> usize {
        self.cameras.push(CameraDesc {
            name: name.to_owned(),
            yfov,
            znear,
        });
        self.add_node(NodeDesc {
            transform: NodeTransform::trs(position, rotation, Vec3::ONE),
            camera: Some(self.cameras.len() - 1),
            ..NodeDesc::new(name)
        })
    }

    /// Triangles drawn by the node hierarchy (each mesh counted once per node using it).
    pub fn instanced_triangle_count(&self) -> usize {
        self.nodes
            .iter()
            .filter_map(|n| n.mesh.and_then(|m| self.meshes.get(m)))
            .flat_map(|m| &m.primitives)
            .map(|p| p.data.triangle_count())
            .sum()
    }

    /// Checks every cross reference and the mesh data.
    fn validate(&self) -> Result<(), String> {
        for (i, m) in self.materials.iter().enumerate() {
            let factors = m
                .base_color_factor
                .iter()
                .chain(&m.emissive_factor)
                .chain([&m.metallic_factor, &m.roughness_factor]);
            if factors.clone().any(|x| !x.is_finite()) {
                return Err(format!("material {i} `{}` has a non-finite factor", m.name));
            }
        }
        for (i, mesh) in self.meshes.iter().enumerate() {
            if mesh.primitives.is_empty() {
                return Err(format!("mesh {i} `{}` has no primitives", mesh.name));
            }
            for p in &mesh.primitives {
                p.data
                    .validate()
                    .map_err(|e| format!("mesh {i} `{}`: {e}", mesh.name))?;
                if p.material >= self.materials.len() {
                    return Err(format!(
                        "mesh {i} `{}` uses missing material {}",
                        mesh.name, p.material
                    ));
                }
            }
        }
        let mut parent = vec![None; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if n.mesh.is_some_and(|m| m >= self.meshes.len()) {
                return Err(format!("node {i} `{}` uses a missing mesh", n.name));
            }
            if n.camera.is_some_and(|c| c >= self.cameras.len()) {
                return Err(format!("node {i} `{}` uses a missing camera", n.name));
            }
            for &c in &n.children {
                if c >= self.nodes.len() || c == i {
                    return Err(format!("node {i} `{}` has invalid child {c}", n.name));
                }
                if parent[c].replace(i).is_some() {
                    return Err(format!("node {c} has more than one parent"));
                }
            }
        }
        for start in 0..self.nodes.len() {
            let mut at = start;
            for _ in 0..=self.nodes.len() {
                match parent[at] {
                    Some(p) => at = p,
                    None => break,
                }
            }
            if parent[at].is_some() {
                return Err(format!("node {start} is part of a cycle"));
            }
        }
        Ok(())
    }

    /// Builds the glTF JSON (referring to the buffer as `bin_uri`) and the binary buffer.
    /// Fails with a description when the accumulated content is inconsistent.
    pub fn document(&self, bin_uri: &str) -> Result<(Value, Vec<u8>), String> {
        self.validate()?;
        let mut bin: Vec<u8> = Vec::new();
        let mut views = Vec::new();
        let mut accessors = Vec::new();
        let mut push_view = |bin: &mut Vec<u8>, bytes: &[u8], target: u32| {
            let offset = bin.len();
            bin.extend_from_slice(bytes);
            views.push(json!({
                "buffer": 0,
                "byteOffset": offset,
                "byteLength": bytes.len(),
                "target": target,
            }));
            views.len() - 1
        };
        const ARRAY_BUFFER: u32 = 34962;
        const ELEMENT_ARRAY_BUFFER: u32 = 34963;
        const FLOAT: u32 = 5126;
        const UNSIGNED_INT: u32 = 5125;

        let mut meshes_json = Vec::new();
        for mesh in &self.meshes {
            let mut prims = Vec::new();
            for p in &mesh.primitives {
                // Normal-mapped materials get MikkTSpace tangents written as TANGENT (the
                // importer would compute the same ones), so the files validate without
                // warnings; generating them may split vertices along UV seams.
                let normal_mapped = self
                    .materials
                    .get(p.material)
                    .is_some_and(|m| m.normal_texture.is_some());
                let with_tangents = normal_mapped.then(|| {
                    let vertices: Vec<crate::scene::Vertex> = (0..p.data.vertex_count())
                        .map(|i| crate::scene::Vertex {
                            position: p.data.positions[i],
                            normal: p.data.normals[i],
                            tangent: [1.0, 0.0, 0.0, 1.0],
                            uv: p.data.uvs[i],
                        })
                        .collect();
                    let (vertices, indices) =
                        crate::scene::tangents::generate(&vertices, &p.data.indices);
                    let data = MeshData {
                        positions: vertices.iter().map(|v| v.position).collect(),
                        normals: vertices.iter().map(|v| v.normal).collect(),
                        uvs: vertices.iter().map(|v| v.uv).collect(),
                        indices,
                    };
                    let tangents: Vec<[f32; 4]> = vertices.iter().map(|v| v.tangent).collect();
                    (data, tangents)
                });
                let d = with_tangents.as_ref().map_or(&p.data, |(d, _)| d);
                let count = d.vertex_count();
                let (lo, hi) = d.bounds().expect("validated meshes are not empty");
                let floats = |v: &mut Vec<u8>, xs: &mut dyn Iterator<Item = f32>| {
                    for x in xs {
                        v.extend_from_slice(&x.to_le_bytes());
                    }
                };
                let mut bytes = Vec::with_capacity(count * 12);
                floats(&mut bytes, &mut d.positions.iter().flatten().copied());
                let view = push_view(&mut bin, &bytes, ARRAY_BUFFER);
                accessors.push(json!({
                    "bufferView": view, "componentType": FLOAT, "count": count, "type": "VEC3",
                    "min": nums(&lo), "max": nums(&hi),
                }));
                let position = accessors.len() - 1;

                bytes.clear();
                floats(&mut bytes, &mut d.normals.iter().flatten().copied());
                let view = push_view(&mut bin, &bytes, ARRAY_BUFFER);
                accessors.push(json!({
                    "bufferView": view, "componentType": FLOAT, "count": count, "type": "VEC3",
                }));
                let normal = accessors.len() - 1;

                bytes.clear();
                floats(&mut bytes, &mut d.uvs.iter().flatten().copied());
                let view = push_view(&mut bin, &bytes, ARRAY_BUFFER);
                accessors.push(json!({
                    "bufferView": view, "componentType": FLOAT, "count": count, "type": "VEC2",
                }));
                let uv = accessors.len() - 1;

                let tangent = with_tangents.as_ref().map(|(_, tangents)| {
                    bytes.clear();
                    floats(&mut bytes, &mut tangents.iter().flatten().copied());
                    let view = push_view(&mut bin, &bytes, ARRAY_BUFFER);
                    accessors.push(json!({
                        "bufferView": view, "componentType": FLOAT, "count": count, "type": "VEC4",
                    }));
                    accessors.len() - 1
                });

                bytes.clear();
                for i in &d.indices {
                    bytes.extend_from_slice(&i.to_le_bytes());
                }
                let view = push_view(&mut bin, &bytes, ELEMENT_ARRAY_BUFFER);
                accessors.push(json!({
                    "bufferView": view, "componentType": UNSIGNED_INT,
                    "count": d.indices.len(), "type": "SCALAR",
                }));
                let indices = accessors.len() - 1;

                let mut attributes =
                    json!({ "POSITION": position, "NORMAL": normal, "TEXCOORD_0": uv });
                if let Some(t) = tangent {
                    attributes["TANGENT"] = t.into();
                }
                prims.push(json!({
                    "attributes": attributes,
                    "indices": indices,
                    "material": p.material,
                    "mode": 4,
                }));
            }
            meshes_json.push(json!({ "name": mesh.name, "primitives": prims }));
        }

        // Images are deduplicated by URI; texture k samples image k with sampler 0.
        let mut images: Vec<String> = Vec::new();
        let mut texture = |uri: &Option<String>| -> Option<Value> {
            let uri = uri.as_deref()?;
            let index = match images.iter().position(|u| *u == uri) {
                Some(i) => i,
                None => {
                    images.push(uri.to_owned());
                    images.len() - 1
                }
            };
            Some(json!({ "index": index }))
        };
        let mut materials_json = Vec::new();
        for m in &self.materials {
            let mut pbr = Map::new();
            pbr.insert("baseColorFactor".into(), nums(&m.base_color_factor));
            pbr.insert("metallicFactor".into(), num(m.metallic_factor));
            pbr.insert("roughnessFactor".into(), num(m.roughness_factor));
            if let Some(t) = texture(&m.base_color_texture) {
                pbr.insert("baseColorTexture".into(), t);
            }
            if let Some(t) = texture(&m.metallic_roughness_texture) {
                pbr.insert("metallicRoughnessTexture".into(), t);
            }
            let mut mat = Map::new();
            mat.insert("name".into(), json!(m.name));
            mat.insert("pbrMetallicRoughness".into(), Value::Object(pbr));
            if let Some(t) = texture(&m.normal_texture) {
                mat.insert("normalTexture".into(), t);
            }
            if let Some(t) = texture(&m.occlusion_texture) {
                mat.insert("occlusionTexture".into(), t);
            }
            if m.emissive_factor != [0.0; 3] {
                mat.insert("emissiveFactor".into(), nums(&m.emissive_factor));
            }
            match m.alpha_mode {
                AlphaMode::Opaque => {}
                AlphaMode::Mask { cutoff } => {
                    mat.insert("alphaMode".into(), json!("MASK"));
                    mat.insert("alphaCutoff".into(), num(cutoff));
                }
                AlphaMode::Blend => {
                    mat.insert("alphaMode".into(), json!("BLEND"));
                }
            }
            if m.double_sided {
                mat.insert("doubleSided".into(), json!(true));
            }
            materials_json.push(Value::Object(mat));
        }

        let mut is_child = vec![false; self.nodes.len()];
        for n in &self.nodes {
            for &c in &n.children {
                is_child[c] = true;
            }
        }
        let nodes_json: Vec<Value> = self
            .nodes
            .iter()
            .map(|n| {
                let mut o = Map::new();
                o.insert("name".into(), json!(n.name));
                match n.transform {
                    NodeTransform::Trs {
                        translation,
                        rotation,
                        scale,
                    } => {
                        if translation != Vec3::ZERO {
                            o.insert("translation".into(), nums(&translation.to_array()));
                        }
                        if rotation != Quat::IDENTITY {
                            o.insert("rotation".into(), nums(&rotation.to_array()));
                        }
                        if scale != Vec3::ONE {
                            o.insert("scale".into(), nums(&scale.to_array()));
                        }
                    }
                    NodeTransform::Matrix(m) => {
                        o.insert("matrix".into(), nums(&m.to_cols_array()));
                    }
                }
                if let Some(m) = n.mesh {
                    o.insert("mesh".into(), json!(m));
                }
                if let Some(c) = n.camera {
                    o.insert("camera".into(), json!(c));
                }
                if !n.children.is_empty() {
                    o.insert("children".into(), json!(n.children));
                }
                Value::Object(o)
            })
            .collect();
        let roots: Vec<usize> = (0..self.nodes.len()).filter(|&i| !is_child[i]).collect();

        let mut doc = Map::new();
        doc.insert(
            "asset".into(),
            json!({ "version": "2.0", "generator": "neurotex" }),
        );
        doc.insert("scene".into(), json!(0));
        let mut scene = Map::new();
        scene.insert("name".into(), json!("scene"));
        if !roots.is_empty() {
            scene.insert("nodes".into(), json!(roots));
        }
        doc.insert("scenes".into(), json!([Value::Object(scene)]));
        let mut put = |key: &str, items: Vec<Value>| {
            if !items.is_empty() {
                doc.insert(key.into(), Value::Array(items));
            }
        };
        put("nodes", nodes_json);
        put("meshes", meshes_json);
        put("materials", materials_json);
        put("accessors", accessors);
        put("bufferViews", views);
        if !bin.is_empty() {
            put(
                "buffers",
                vec![json!({ "byteLength": bin.len(), "uri": bin_uri })],
            );
        }
        put(
            "cameras",
            self.cameras
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "type": "perspective",
                        "perspective": { "yfov": num(c.yfov), "znear": num(c.znear) },
                    })
                })
                .collect(),
        );
        if !images.is_empty() {
            put(
                "samplers",
                // LINEAR, LINEAR_MIPMAP_LINEAR, REPEAT, REPEAT
                vec![
                    json!({ "magFilter": 9729, "minFilter": 9987, "wrapS": 10497, "wrapT": 10497 }),
                ],
            );
            put(
                "textures",
                (0..images.len())
                    .map(|i| json!({ "sampler": 0, "source": i }))
                    .collect(),
            );
            put(
                "images",
                images.iter().map(|u| json!({ "uri": u })).collect(),
            );
        }
        Ok((Value::Object(doc), bin))
    }

    /// Writes `dir/<name>.gltf` and `dir/<name>.bin` (each through a temporary file that
    /// is renamed into place; the buffer first) and returns the `.gltf` path. `dir` must
    /// exist; image files are not written here.
    pub fn write(&self, dir: &Path, name: &str) -> Result<PathBuf, GltfWriteError> {
        let gltf_path = dir.join(format!("{name}.gltf"));
        let bin_name = format!("{name}.bin");
        let bin_path = dir.join(&bin_name);
        let (doc, bin) = self
            .document(&bin_name)
            .map_err(|reason| GltfWriteError::Invalid {
                path: gltf_path.clone(),
                reason,
            })?;
        if !bin.is_empty() {
            write_atomic(&bin_path, &bin).map_err(|source| GltfWriteError::Io {
                path: bin_path.clone(),
                source,
            })?;
        }
        let mut text = serde_json::to_vec_pretty(&doc).map_err(|e| GltfWriteError::Invalid {
            path: gltf_path.clone(),
            reason: e.to_string(),
        })?;
        text.push(b'\n');
        write_atomic(&gltf_path, &text).map_err(|source| GltfWriteError::Io {
            path: gltf_path.clone(),
            source,
        })?;
        Ok(gltf_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every triangle's geometric normal must agree with its vertex normals.
    fn assert_outward(name: &str, m: &MeshData) {
        m.validate().expect("valid mesh");
        for tri in m.indices.chunks_exact(3) {
            let p = |i: u32| Vec3::from(m.positions[i as usize]);
            let n = |i: u32| Vec3::from(m.normals[i as usize]);
            let g = (p(tri[1]) - p(tri[0])).cross(p(tri[2]) - p(tri[0]));
            if g.length() < 1e-9 {
                continue;
            }
            let avg = n(tri[0]) + n(tri[1]) + n(tri[2]);
            assert!(g.dot(avg) > 0.0, "{name}: inward triangle {tri:?}");
        }
    }

    #[test]
    fn shapes_face_outwards() {
        assert_outward(
            "box",
            &box_mesh(Vec3::new(1.0, 2.0, 3.0), UvMode::PerMetre(2.0)),
        );
        assert_outward("plane", &plane(2.0, 1.0, UvMode::Unit));
        assert_outward("sphere", &uv_sphere(1.0, 12, 8, UvMode::Unit));
        assert_outward("cylinder", &cylinder(0.5, 1.0, 10, true, UvMode::Unit));
        assert_outward("cone", &cone(0.5, 1.0, 10, UvMode::PerMetre(2.0)));
        assert_outward("torus", &torus(1.0, 0.25, 12, 8, UvMode::PerMetre(3.0)));
        let mirrored = cylinder(0.5, 1.0, 10, true, UvMode::Unit)
            .transformed(Mat4::from_scale(Vec3::new(-1.0, 2.0, 1.0)));
        assert_outward("mirrored", &mirrored);
    }

    #[test]
    fn box_uvs_scale_per_metre() {
        let m = box_mesh(Vec3::new(2.0, 1.0, 0.5), UvMode::PerMetre(0.5));
        // +Z face: 2 m wide, 1 m high → u up to 1, v up to 0.5.
        let face = &m.uvs[16..20];
        let max_u = face.iter().map(|uv| uv[0]).fold(0.0, f32::max);
        let max_v = face.iter().map(|uv| uv[1]).fold(0.0, f32::max);
        assert_eq!((max_u, max_v), (1.0, 0.5));
    }

    #[test]
    fn document_is_consistent() {
        let mut b = GltfBuilder::new();
        let mat = b.add_material(MaterialDesc {
            base_color_texture: Some("textures/a.png".into()),
            occlusion_texture: Some("textures/b.png".into()),
            metallic_roughness_texture: Some("textures/b.png".into()),
            ..MaterialDesc::new("a")
        });
        let mesh = b.add_mesh("box", box_mesh(Vec3::ONE, UvMode::Unit), mat);
        let child = b.add_mesh_node("box", mesh, NodeTransform::translation(Vec3::X));
        b.add_group("group", NodeTransform::IDENTITY, vec![child]);
        b.add_camera(
            "cam",
            Vec3::Z,
            look_rotation(Vec3::NEG_Z, Vec3::Y),
            0.8,
            0.1,
        );
        let (doc, bin) = b.document("x.bin").expect("valid document");
        assert_eq!(bin.len(), 24 * (12 + 12 + 8) + 36 * 4);
        assert_eq!(doc["images"].as_array().map(Vec::len), Some(2));
        assert_eq!(doc["scenes"][0]["nodes"], json!([1, 2]));
        assert_eq!(doc["accessors"][0]["max"], json!([0.5, 0.5, 0.5]));
        assert_eq!(doc["nodes"][0]["translation"], json!([1.0, 0.0, 0.0]));
        let parsed = gltf::Gltf::from_slice(&serde_json::to_vec(&doc).expect("serialisable"));
        assert!(parsed.is_ok(), "{parsed:?}");

        b.add_group("bad", NodeTransform::IDENTITY, vec![child]);
        assert!(b.document("x.bin").is_err());
    }

    #[test]
    fn look_rotation_points_camera() {
        let f = Vec3::new(-1.0, -0.2, -0.8).normalize();
        let q = look_rotation(f, Vec3::Y);
        assert!((q * Vec3::NEG_Z - f).length() < 1e-5);
        assert!((q * Vec3::Y).y > 0.0);
    }
}
