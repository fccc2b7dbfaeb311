//! Tangent frames: MikkTSpace tangents for normal-mapped primitives that ship none, and
//! area-weighted vertex normals for primitives without normals.
//!
//! MikkTSpace assigns a tangent per triangle corner; corners of one vertex that disagree
//! are split into separate vertices so the result stays an indexed triangle list.

use std::collections::HashMap;

use glam::Vec3;

use super::Vertex;

/// Area-weighted smooth vertex normals of an indexed triangle list.
pub fn vertex_normals(positions: &[[f32; 3]], indices: &[u32]) -> Vec<[f32; 3]> {
    let mut acc = vec![Vec3::ZERO; positions.len()];
    for tri in indices.chunks_exact(3) {
        let [a, b, c] = [tri[0], tri[1], tri[2]].map(|i| Vec3::from(positions[i as usize]));
        // The cross product's length is twice the area: weighting by it is area weighting.
        let n = (b - a).cross(c - a);
        for &i in tri {
            acc[i as usize] += n;
        }
    }
    acc.into_iter()
        .map(|n| n.normalize_or(Vec3::Y).into())
        .collect()
}

/// Give every vertex some unit tangent orthogonal to its normal (for primitives that are
/// not normal-mapped, so the G-buffer still holds a valid frame).
pub fn fill_arbitrary(vertices: &mut [Vertex]) {
    for v in vertices {
        let n = Vec3::from(v.normal);
        let t = n.any_orthonormal_vector();
        v.tangent = [t.x, t.y, t.z, 1.0];
    }
}

struct Geometry<'a> {
    vertices: &'a [Vertex],
    indices: &'a [u32],
    corner_tangents: Vec<[f32; 4]>,
}

impl mikktspace::Geometry for Geometry<'_> {
    fn num_faces(&self) -> usize {
        self.indices.len() / 3
    }
    fn num_vertices_of_face(&self, _face: usize) -> usize {
        3
    }
    fn position(&self, face: usize, vert: usize) -> [f32; 3] {
        self.vertices[self.indices[face * 3 + vert] as usize].position
    }
    fn normal(&self, face: usize, vert: usize) -> [f32; 3] {
        self.vertices[self.indices[face * 3 + vert] as usize].normal
    }
    fn tex_coord(&self, face: usize, vert: usize) -> [f32; 2] {
        self.vertices[self.indices[face * 3 + vert] as usize].uv
    }
    fn set_tangent_encoded(&mut self, tangent: [f32; 4], face: usize, vert: usize) {
        self.corner_tangents[face * 3 + vert] = tangent;
    }
}

/// MikkTSpace tangents (w = bitangent sign, glTF convention) for an indexed triangle list.
/// Returns new vertices and indices: vertices whose corners got different tangents are split.
pub fn generate(vertices: &[Vertex], indices: &[u32]) -> (Vec<Vertex>, Vec<u32>) {
    let mut geometry = Geometry {
        vertices,
        indices,
        corner_tangents: vec![[0.0; 4]; indices.len()],
    };
    let ok = mikktspace::generate_tangents(&mut geometry);
    let mut out_vertices: Vec<Vertex> = Vec::with_capacity(vertices.len());
    let mut out_indices = Vec::with_capacity(indices.len());
    let mut remap: HashMap<(u32, [u32; 4]), u32> = HashMap::with_capacity(vertices.len());
    for (corner, &index) in indices.iter().enumerate() {
        let mut v = vertices[index as usize];
        let t = geometry.corner_tangents[corner];
        // Gram–Schmidt against the vertex normal: MikkTSpace returns an arbitrary axis for
        // corners with degenerate UVs (e.g. sphere poles), which need not be orthogonal.
        let n = Vec3::from(v.normal);
        let t3 = Vec3::new(t[0], t[1], t[2]);
        let t3 = t3 - n * n.dot(t3);
        v.tangent = if ok && t3.is_finite() && t3.length_squared() > 1e-12 {
            let t3 = t3.normalize();
            [t3.x, t3.y, t3.z, if t[3] < 0.0 { -1.0 } else { 1.0 }]
        } else {
            let t3 = n.any_orthonormal_vector();
            [t3.x, t3.y, t3.z, 1.0]
        };
        let key = (index, v.tangent.map(f32::to_bits));
        let new_index = *remap.entry(key).or_insert_with(|| {
            out_vertices.push(v);
            (out_vertices.len() - 1) as u32
        });
        out_indices.push(new_index);
    }
    (out_vertices, out_indices)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quad(uvs: [[f32; 2]; 4]) -> (Vec<Vertex>, Vec<u32>) {
        // A unit quad in the XY plane facing +Z.
        let p = [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
        ];
        let v = (0..4)
            .map(|i| Vertex {
                position: p[i],
                normal: [0.0, 0.0, 1.0],
                tangent: [0.0; 4],
                uv: uvs[i],
            })
            .collect();
        (v, vec![0, 1, 2, 0, 2, 3])
    }

    /// Every vertex of `out` has tangent `t` and handedness `w`.
    fn assert_tangents(out: &[Vertex], t: Vec3, w: f32) {
        for v in out {
            let tangent = Vec3::new(v.tangent[0], v.tangent[1], v.tangent[2]);
            assert!((tangent - t).length() < 1e-5, "tangent {tangent:?}");
            assert_eq!(v.tangent[3], w);
        }
    }

    /// Hand computation: with positions P and UVs as below, dP/du = +X and dP/dv = −Y
    /// (glTF's v runs down the image), so T = +X, B = −Y and
    /// w = sign(dot(cross(N, T), B)) = sign(dot(+Y, −Y)) = −1.
    #[test]
    fn quad_tangent_matches_hand_computation() {
        let (v, i) = quad([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]);
        let (out, idx) = generate(&v, &i);
        assert_eq!(idx.len(), 6);
        assert_eq!(out.len(), 4, "a planar quad needs no split vertices");
        assert_tangents(&out, Vec3::X, -1.0);
    }

    /// Mirrored UVs (u runs along −X, v up the image along +Y): T = −X, B = +Y,
    /// w = sign(dot(cross(+Z, −X), +Y)) = sign(dot(−Y, +Y)) = −1.
    #[test]
    fn mirrored_quad_tangent() {
        let (v, i) = quad([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
        let (out, _) = generate(&v, &i);
        assert_tangents(&out, -Vec3::X, -1.0);
    }

    /// u along +X and v along +Y (image flipped): T = +X, B = +Y, w = sign(dot(+Y, +Y)) = +1.
    #[test]
    fn flipped_v_quad_tangent() {
        let (v, i) = quad([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]);
        let (out, _) = generate(&v, &i);
        assert_tangents(&out, Vec3::X, 1.0);
    }

    #[test]
    fn smooth_normals_of_a_flat_quad() {
        let (v, i) = quad([[0.0; 2]; 4]);
        let p: Vec<[f32; 3]> = v.iter().map(|v| v.position).collect();
        for n in vertex_normals(&p, &i) {
            assert_eq!(n, [0.0, 0.0, 1.0]);
        }
    }
}
