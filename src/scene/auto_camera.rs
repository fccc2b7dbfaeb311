//! A camera for a scene that brings none: outside objects it frames the whole scene;
//! inside closed rooms (most rays from the centre hit geometry) it stands in the corner
//! with the clearest view, at eye height, looking across the room.

use glam::Vec3;

use super::{Camera, Scene};

/// Brute-force ray casting over every instanced triangle (used a handful of times per
/// scene load, so no acceleration structure).
struct Tracer<'a> {
    scene: &'a Scene,
}

impl Tracer<'_> {
    /// Distance to the nearest hit along `dir` (unit), if any within `max`.
    fn cast(&self, origin: Vec3, dir: Vec3, max: f32) -> Option<f32> {
        let mut best = max;
        let mut hit = false;
        for inst in &self.scene.instances {
            let m = inst.world_from_local;
            for p in &self.scene.meshes[inst.mesh].primitives {
                for tri in p.indices.chunks_exact(3) {
                    let [a, b, c] = [tri[0], tri[1], tri[2]]
                        .map(|i| m.transform_point3(Vec3::from(p.vertices[i as usize].position)));
                    if let Some(t) = ray_triangle(origin, dir, a, b, c)
                        && t < best
                    {
                        best = t;
                        hit = true;
                    }
                }
            }
        }
        hit.then_some(best)
    }
}

/// Möller–Trumbore, both faces; distance along `dir`.
fn ray_triangle(o: Vec3, d: Vec3, a: Vec3, b: Vec3, c: Vec3) -> Option<f32> {
    let e1 = b - a;
    let e2 = c - a;
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det.abs() < 1e-12 {
        return None;
    }
    let inv = 1.0 / det;
    let s = o - a;
    let u = s.dot(p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(e1);
    let v = d.dot(q) * inv;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(q) * inv;
    (t > 1e-4).then_some(t)
}

impl Camera {
    /// The automatic camera for `scene` (see the module docs).
    pub fn auto(scene: &Scene) -> Camera {
        let b = scene.bounds;
        let center = b.center();
        let half = (b.max - b.min) * 0.5;
        let reach = half.length() * 2.0 + 1.0;
        let tracer = Tracer { scene };
        let dirs = [Vec3::X, -Vec3::X, Vec3::Z, -Vec3::Z, Vec3::Y, -Vec3::Y];
        let enclosed = dirs
            .iter()
            .filter(|&&d| tracer.cast(center, d, reach).is_some())
            .count()
            >= 5;
        if !enclosed {
            return Camera::framing(&b);
        }
        let height = b.max.y - b.min.y;
        let eye_y = b.min.y + (0.55 * height).min(1.6);
        let target_y = b.min.y + 0.3 * height;
        let mut best: Option<(f32, Camera)> = None;
        for (sx, sz) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)] {
            let eye = Vec3::new(
                center.x + sx * 0.75 * half.x,
                eye_y,
                center.z + sz * 0.75 * half.z,
            );
            let target = Vec3::new(
                center.x - sx * 0.3 * half.x,
                target_y,
                center.z - sz * 0.3 * half.z,
            );
            // The corner must be reachable from the centre at eye height (not inside furniture).
            let from = Vec3::new(center.x, eye_y, center.z);
            let to_eye = eye - from;
            if tracer
                .cast(from, to_eye.normalize(), to_eye.length())
                .is_some()
            {
                continue;
            }
            let forward = (target - eye).normalize();
            let clear = tracer.cast(eye, forward, reach).unwrap_or(reach);
            if best.as_ref().is_none_or(|(d, _)| clear > *d) {
                best = Some((
                    clear,
                    Camera {
                        name: "auto".into(),
                        position: eye,
                        forward,
                        yfov: 65f32.to_radians(),
                        znear: 0.02,
                    },
                ));
            }
        }
        best.map(|(_, c)| c).unwrap_or_else(|| Camera::framing(&b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ray_hits_triangle_front_and_back() {
        let (a, b, c) = (
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(1.0, -1.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
        );
        assert_eq!(
            ray_triangle(Vec3::new(0.0, 0.0, 2.0), -Vec3::Z, a, b, c),
            Some(2.0)
        );
        assert_eq!(
            ray_triangle(Vec3::new(0.0, 0.0, -3.0), Vec3::Z, a, b, c),
            Some(3.0)
        );
        assert_eq!(
            ray_triangle(Vec3::new(5.0, 0.0, 2.0), -Vec3::Z, a, b, c),
            None
        );
        assert_eq!(
            ray_triangle(Vec3::new(0.0, 0.0, 2.0), Vec3::Z, a, b, c),
            None
        );
    }
}
