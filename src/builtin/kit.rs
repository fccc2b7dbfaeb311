//! The construction kit both generators build with, so that the street and the toy shop
//! share one set of geometry helpers:
//!
//! - a [`Part`] is [`MeshData`] with its glTF material index, [`Mtl`] a material with
//!   the UV layout an element asks for, [`merge`] joins parts of one material into one
//!   primitive;
//! - shape helpers over the [`gltf_builder`](super::gltf_builder) shapes: [`cuboid`],
//!   [`rot`] (a rotation in turns through the platform-independent sine), [`Segments`]
//!   (how round a shape of a given radius is drawn, per generator);
//! - [`Assembly`]: a glTF document under construction with its layout seed: reusable
//!   meshes, placed nodes, groups and deterministic random numbers.
//!
//! Everything is a pure function of its arguments, so the same calls produce the same
//! bytes on every platform.

use glam::{Mat4, Quat, Vec3};

use super::gltf_builder::{GltfBuilder, MeshData, NodeTransform, UvMode, box_mesh};
use super::procedural::{hash2, sin_cos_turns, unit_f32};

/// A piece of geometry with its glTF material index.
pub type Part = (MeshData, usize);

/// A material as a scene element uses it: its glTF index and the UV layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mtl {
    /// glTF material index.
    pub index: usize,
    /// UV layout.
    pub uv: UvMode,
}

/// Shorthand for [`Vec3::new`].
pub fn v(x: f32, y: f32, z: f32) -> Vec3 {
    Vec3::new(x, y, z)
}

/// Rotation of `turns` around a unit `axis`, through the platform-independent sine.
pub fn rot(axis: Vec3, turns: f32) -> Quat {
    let (s, c) = sin_cos_turns(turns * 0.5);
    Quat::from_xyzw(axis.x * s, axis.y * s, axis.z * s, c)
}

/// Segment counts for round shapes by radius: the count of the first step whose radius
/// the shape reaches, else `least`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segments {
    /// `(minimum radius in metres, segments)`, largest radius first.
    pub steps: &'static [(f32, u32)],
    /// Segments of a shape smaller than every step.
    pub least: u32,
}

impl Segments {
    /// Segment count for a round shape of radius `r`.
    pub fn for_radius(&self, r: f32) -> u32 {
        self.steps
            .iter()
            .find(|&&(min, _)| r >= min)
            .map_or(self.least, |&(_, n)| n)
    }
}

/// A box of `size` centred at `center`, with the material's UV layout.
pub fn cuboid(m: impl Into<Mtl>, size: Vec3, center: Vec3) -> Part {
    let m = m.into();
    (
        box_mesh(size, m.uv).transformed(Mat4::from_translation(center)),
        m.index,
    )
}

/// Merges parts that share a material into one primitive each, in order of first use.
pub fn merge(parts: Vec<Part>) -> Vec<(MeshData, usize)> {
    let mut prims: Vec<(MeshData, usize)> = Vec::new();
    for (data, m) in parts {
        match prims.iter_mut().find(|p| p.1 == m) {
            Some(p) => p.0.append(&data),
            None => prims.push((data, m)),
        }
    }
    prims
}

/// A glTF document under construction with the seed of its layout.
pub struct Assembly {
    /// The document.
    pub b: GltfBuilder,
    /// Seed of [`rand`](Self::rand).
    seed: u32,
}

impl Assembly {
    /// An assembly of `b` whose random numbers follow `seed`.
    pub fn new(b: GltfBuilder, seed: u32) -> Self {
        Self { b, seed }
    }

    /// The layout seed.
    pub fn seed(&self) -> u32 {
        self.seed
    }

    /// A deterministic hash of the pair `(a, b)` under the layout seed.
    pub fn hash(&self, a: i32, b: i32) -> u32 {
        hash2(a, b, self.seed)
    }

    /// A deterministic number in `[0, 1)` for the pair `(a, b)`.
    pub fn rand(&self, a: i32, b: i32) -> f32 {
        unit_f32(self.hash(a, b))
    }

    /// Adds a (reusable) mesh of `parts`, merged per material; returns its index.
    pub fn mesh(&mut self, name: &str, parts: Vec<Part>) -> usize {
        self.b.add_mesh_primitives(name, merge(parts))
    }

    /// Places `mesh` at `pos`, turned `yaw` turns around +Y and uniformly scaled;
    /// returns the node index.
    pub fn put(&mut self, name: &str, mesh: usize, pos: Vec3, yaw: f32, scale: f32) -> usize {
        self.b.add_mesh_node(
            name,
            mesh,
            NodeTransform::trs(pos, rot(Vec3::Y, yaw), Vec3::splat(scale)),
        )
    }

    /// Adds world-space `parts` as their own mesh and node; returns the node index
    /// (nothing is added, and `None` returned, when `parts` is empty).
    pub fn fixed(&mut self, name: &str, parts: Vec<Part>) -> Option<usize> {
        if parts.is_empty() {
            return None;
        }
        let mesh = self.mesh(name, parts);
        Some(self.b.add_mesh_node(name, mesh, NodeTransform::IDENTITY))
    }

    /// Groups `children` under a node at `pos` turned `yaw` turns around +Y; returns the
    /// group's node index.
    pub fn group(&mut self, name: &str, pos: Vec3, yaw: f32, children: Vec<usize>) -> usize {
        self.b.add_group(
            name,
            NodeTransform::trs(pos, rot(Vec3::Y, yaw), Vec3::ONE),
            children,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_step_down_with_the_radius() {
        let s = Segments {
            steps: &[(0.1, 24), (0.05, 16)],
            least: 8,
        };
        assert_eq!(s.for_radius(0.2), 24);
        assert_eq!(s.for_radius(0.1), 24);
        assert_eq!(s.for_radius(0.07), 16);
        assert_eq!(s.for_radius(0.01), 8);
    }

    #[test]
    fn rotations_in_turns() {
        assert_eq!(rot(Vec3::Y, 0.0), Quat::IDENTITY);
        let q = rot(Vec3::Y, 0.25);
        let x = q * Vec3::X;
        assert!((x - Vec3::new(0.0, 0.0, -1.0)).length() < 1e-6, "{x:?}");
    }

    #[test]
    fn parts_merge_per_material_in_order() {
        let m = |index| Mtl {
            index,
            uv: UvMode::Unit,
        };
        let parts = vec![
            cuboid(m(3), Vec3::ONE, Vec3::ZERO),
            cuboid(m(1), Vec3::ONE, Vec3::X),
            cuboid(m(3), Vec3::ONE, Vec3::Y),
        ];
        let one = parts[0].0.vertex_count();
        let prims = merge(parts);
        assert_eq!(prims.len(), 2);
        assert_eq!((prims[0].1, prims[1].1), (3, 1));
        assert_eq!(prims[0].0.vertex_count(), 2 * one);
        assert_eq!(prims[1].0.vertex_count(), one);
        assert_eq!(
            prims[1].0.bounds(),
            Some(([0.5, -0.5, -0.5], [1.5, 0.5, 0.5]))
        );
    }

    #[test]
    fn assembly_places_meshes_and_skips_empty_parts() {
        let mut a = Assembly::new(GltfBuilder::new(), 7);
        let m = Mtl {
            index: 0,
            uv: UvMode::Unit,
        };
        assert_eq!(a.fixed("nothing", Vec::new()), None);
        let mesh = a.mesh("box", vec![cuboid(m, Vec3::ONE, Vec3::ZERO)]);
        let n0 = a.put("a", mesh, Vec3::X, 0.25, 2.0);
        let n1 = a
            .fixed("floor", vec![cuboid(m, Vec3::ONE, Vec3::ZERO)])
            .unwrap();
        let g = a.group("g", Vec3::ZERO, 0.0, vec![n0, n1]);
        assert_eq!((n0, n1, g), (0, 1, 2));
        assert_eq!(a.rand(1, 2), a.rand(1, 2));
        assert_eq!(a.hash(5, 6), hash2(5, 6, 7));
        assert!((0.0..1.0).contains(&a.rand(3, 4)));
        assert_ne!(
            a.rand(1, 2),
            Assembly::new(GltfBuilder::new(), 8).rand(1, 2)
        );
    }
}
