//! The street's layout: its dimensions, the shape helpers, and [`Street`], which places
//! every element (road, buildings, shop fronts, the terrace, street furniture) and asks
//! the palette for each element's texture set.

use super::*;

// ---------------------------------------------------------------------------------------
// Geometry helpers
// ---------------------------------------------------------------------------------------

/// Segment counts of the street's round shapes.
const SEGMENTS: Segments = Segments {
    steps: &[(0.15, 24), (0.05, 16), (0.02, 10)],
    least: 6,
};

/// A box of `size` centred at `center`, turned `yaw` turns around +Y after tilting
/// `tilt` turns around +X (its ±Z faces show upright images from outside).
fn tilted(m: Mtl, size: Vec3, center: Vec3, yaw: f32, tilt: f32) -> Part {
    let xf = Mat4::from_rotation_translation(rot(Vec3::Y, yaw) * rot(Vec3::X, tilt), center);
    (box_mesh(size, m.uv).transformed(xf), m.index)
}

/// A box from `lo` to `hi` whose UVs are projected from its position (metres), so that
/// neighbouring boxes of one wall or floor continue each other's texture.
fn block(m: Mtl, lo: Vec3, hi: Vec3) -> Part {
    let mut d = box_mesh(hi - lo, m.uv).transformed(Mat4::from_translation((lo + hi) * 0.5));
    if let UvMode::PerMetre(k) = m.uv {
        for ((uv, p), n) in d.uvs.iter_mut().zip(&d.positions).zip(&d.normals) {
            let [x, y, z] = *p;
            let [nx, ny, nz] = *n;
            *uv = if nz > 0.5 {
                [x * k, -y * k]
            } else if nz < -0.5 {
                [-x * k, -y * k]
            } else if nx > 0.5 {
                [-z * k, -y * k]
            } else if nx < -0.5 {
                [z * k, -y * k]
            } else if ny > 0.5 {
                [x * k, z * k]
            } else {
                [x * k, -z * k]
            };
        }
    }
    (d, m.index)
}

/// A board of `width` × `thick` running from `a` to `b` (width horizontal when possible).
fn beam(m: Mtl, a: Vec3, b: Vec3, width: f32, thick: f32) -> Part {
    let d = b - a;
    let len = d.length().max(1e-3);
    let dir = d.try_normalize().unwrap_or(Vec3::Y);
    let side = Vec3::Y.cross(dir).try_normalize().unwrap_or(Vec3::X);
    let normal = dir.cross(side);
    let xf = Mat4::from_cols(
        side.extend(0.0),
        normal.extend(0.0),
        dir.extend(0.0),
        ((a + b) * 0.5).extend(1.0),
    );
    (
        box_mesh(v(width, thick, len), m.uv).transformed(xf),
        m.index,
    )
}

/// A capped cylinder of radius `r` from `a` to `b`.
fn rod(m: Mtl, r: f32, a: Vec3, b: Vec3) -> Part {
    let d = b - a;
    let len = d.length().max(1e-3);
    let q = Quat::from_rotation_arc(Vec3::Y, d.try_normalize().unwrap_or(Vec3::Y));
    let xf = Mat4::from_rotation_translation(q, (a + b) * 0.5);
    (
        cylinder(r, len, SEGMENTS.for_radius(r), true, m.uv).transformed(xf),
        m.index,
    )
}

/// An upright capped cylinder of radius `r` and height `h` standing on `base`.
fn drum(m: Mtl, r: f32, h: f32, base: Vec3) -> Part {
    rod(m, r, base, base + Vec3::Y * h)
}

/// An ellipsoid with semi-axes `radii` centred at `center`.
fn ellipsoid(m: Mtl, radii: Vec3, center: Vec3) -> Part {
    let s = SEGMENTS.for_radius(radii.max_element());
    let xf = Mat4::from_scale_rotation_translation(radii, Quat::IDENTITY, center);
    (uv_sphere(1.0, s, s * 2 / 3, m.uv).transformed(xf), m.index)
}

/// A horizontal ring (torus) centred at `center`.
fn hoop(m: Mtl, major: f32, minor: f32, center: Vec3) -> Part {
    (
        torus(major, minor, SEGMENTS.for_radius(major), 6, m.uv)
            .transformed(Mat4::from_translation(center)),
        m.index,
    )
}

/// An upright cone (base radius `r`, height `h`, `n` sides) standing on `base`.
fn spire(m: Mtl, r: f32, h: f32, n: u32, base: Vec3) -> Part {
    (
        cone(r, h, n, m.uv).transformed(Mat4::from_translation(base + Vec3::Y * (h * 0.5))),
        m.index,
    )
}

/// A flat disc of radius `r` and thickness `t` centred at `center`, its face (the whole
/// image, upright) turned towards `yaw` turns around +Y from +Z.
fn roundel(m: Mtl, r: f32, t: f32, center: Vec3, yaw: f32) -> Part {
    let xf = Mat4::from_rotation_translation(rot(Vec3::Y, yaw) * rot(Vec3::X, 0.25), center);
    (
        cylinder(r, t, SEGMENTS.for_radius(r), true, m.uv).transformed(xf),
        m.index,
    )
}

/// A rectangle `w` × `h` facing +Z centred at `center`, showing the whole image upright.
fn decal(m: Mtl, w: f32, h: f32, center: Vec3) -> Part {
    let xf = Mat4::from_rotation_translation(rot(Vec3::X, 0.25), center);
    (plane(w, h, UvMode::Unit).transformed(xf), m.index)
}

/// A railing of height `h` along the horizontal segment `a` → `b`: hand rail, bottom
/// rail and balusters.
fn railing(parts: &mut Vec<Part>, m: Mtl, a: Vec3, b: Vec3, h: f32) {
    let up = Vec3::Y;
    parts.push(beam(m, a + up * h, b + up * h, 0.05, 0.045));
    parts.push(beam(m, a + up * 0.1, b + up * 0.1, 0.03, 0.03));
    let n = (((b - a).length() / 0.13).round() as u32).max(2);
    for i in 0..=n {
        let p = a.lerp(b, i as f32 / n as f32);
        parts.push(cuboid(m, v(0.022, h, 0.022), p + up * (h * 0.5)));
    }
}

// ---------------------------------------------------------------------------------------
// Layout
// ---------------------------------------------------------------------------------------

/// Pavement surface height.
const PAVE_Y: f32 = 0.15;
/// Facade line of the café side (facades face −Z).
const NORTH_Z: f32 = 10.0;
/// Facade line of the opposite side (facades face +Z).
const SOUTH_Z: f32 = -7.0;
/// Kerb edges (the road lies between them).
pub(super) const KERB_Z: f32 = 3.2;
/// The street's blocks span `−STREET_END..STREET_END` along X.
const STREET_END: f32 = 22.0;
/// Facade line of the buildings closing the cross streets.
const CROSS_X: f32 = 30.0;
/// Half extent of the ground along Z.
const GROUND_HALF_Z: f32 = 24.0;
/// Ground-floor and upper-storey heights.
const GROUND_H: f32 = 4.5;
const STOREY_H: f32 = 3.2;
/// Facade wall thickness and building depth.
const WALL_T: f32 = 0.4;
const DEPTH: f32 = 9.0;
/// Eye height above the pavement.
pub(super) const EYE: f32 = PAVE_Y + 1.65;

/// What a building has on its ground floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ground {
    Cafe,
    Shop,
    Residential,
}

/// Proportions and features of one building.
#[derive(Clone, Copy, Debug)]
struct Plan {
    width: f32,
    upper: u32,
    ground: Ground,
    shutters: bool,
    balcony: bool,
    top_balcony: bool,
    awning: bool,
    flower_boxes: bool,
    antenna: bool,
    key: i32,
}

/// Materials shared by the parts of one building.
struct BuildingMats {
    facade: Mtl,
    trim: Mtl,
    cornice: Mtl,
    glass: Mtl,
    frame: Mtl,
    railing: Mtl,
    roof: Mtl,
    shutter: Option<Mtl>,
    balcony: Option<Mtl>,
    flowers: Option<(Mtl, Mtl)>,
}

/// A free spot on a facade for an extra prop: the frame has its origin on the wall face,
/// +Z pointing out of the wall.
pub(super) struct WallSlot {
    frame: Mat4,
    width: f32,
    rank: u32,
    key: u32,
}

/// The scene under construction.
pub(super) struct Street {
    pub(super) asm: Assembly,
    pub(super) pal: Palette,
    pub(super) slots: Vec<WallSlot>,
}

impl Street {
    fn pick(&mut self, role: Role) -> Mtl {
        self.pal.pick(role)
    }

    pub(super) fn build(&mut self) {
        self.ground();
        self.buildings();
        self.terrace();
        self.furniture();
        self.extras();
    }

    /// Road, pavements and kerbs.
    fn ground(&mut self) {
        let road = self.pick(Role::Road);
        let pave = self.pick(Role::Pavement);
        let kerb = self.pick(Role::Kerb);
        let (e, k, y) = (STREET_END, 0.3, PAVE_Y);
        let mut parts = vec![block(
            road,
            v(-CROSS_X - 4.0, -0.3, -GROUND_HALF_Z),
            v(CROSS_X + 4.0, 0.0, GROUND_HALF_Z),
        )];
        // The two pavements of the street, kerbed on three sides.
        for (z_kerb, z_wall) in [(KERB_Z, NORTH_Z), (-KERB_Z, SOUTH_Z)] {
            let s = z_wall.signum();
            let (z0, z1) = (z_kerb + s * k, z_wall);
            parts.push(block(pave, v(-e, 0.0, z0.min(z1)), v(e, y, z0.max(z1))));
            parts.push(block(
                kerb,
                v(-e - k, 0.0, z_kerb.min(z0)),
                v(e + k, y, z_kerb.max(z0)),
            ));
            for x in [-e - k, e] {
                parts.push(block(kerb, v(x, 0.0, z0.min(z1)), v(x + k, y, z0.max(z1))));
            }
        }
        // Pavements in front of the buildings closing the cross streets.
        for s in [-1.0f32, 1.0] {
            let (x_wall, x_kerb) = (s * CROSS_X, s * (CROSS_X - 2.0));
            parts.push(block(
                pave,
                v(x_wall.min(x_kerb), 0.0, -GROUND_HALF_Z),
                v(x_wall.max(x_kerb), y, GROUND_HALF_Z),
            ));
            let x_edge = x_kerb - s * k;
            parts.push(block(
                kerb,
                v(x_kerb.min(x_edge), 0.0, -GROUND_HALF_Z),
                v(x_kerb.max(x_edge), y, GROUND_HALF_Z),
            ));
        }
        self.asm.fixed("ground", parts);
    }

    /// A plan for a building of `width` with seeded features.
    fn plan(&self, key: i32, width: f32, ground: Ground) -> Plan {
        let r = |k: i32| self.asm.rand(key, k);
        Plan {
            width,
            upper: 3 + (r(1) * 2.99) as u32,
            ground,
            shutters: r(2) < 0.55,
            balcony: r(3) < 0.6,
            top_balcony: r(4) < 0.5,
            awning: ground == Ground::Shop && r(5) < 0.7,
            flower_boxes: r(6) < 0.5,
            antenna: r(7) < 0.45,
            key,
        }
    }

    /// Both rows of buildings and the two closing the cross streets.
    fn buildings(&mut self) {
        // Café side: the café in the middle, two buildings on each side of it.
        let a = 6.5 + 2.0 * self.asm.rand(1, 0);
        let b = 6.5 + 2.0 * self.asm.rand(2, 0);
        let north = [
            (-STREET_END, -STREET_END + a, Ground::Residential),
            (-STREET_END + a, -7.0, Ground::Shop),
            (-7.0, 7.0, Ground::Cafe),
            (7.0, 7.0 + b, Ground::Shop),
            (7.0 + b, STREET_END, Ground::Residential),
        ];
        for (i, &(x0, x1, ground)) in north.iter().enumerate() {
            let key = 10 + i as i32;
            let mut plan = self.plan(key, x1 - x0, ground);
            if ground == Ground::Cafe {
                plan = Plan {
                    upper: 4,
                    balcony: false,
                    top_balcony: true,
                    ..plan
                };
            }
            let xf = Mat4::from_rotation_translation(
                rot(Vec3::Y, 0.5),
                v((x0 + x1) * 0.5, PAVE_Y, NORTH_Z),
            );
            self.building(&format!("building_north_{i}"), &plan, xf);
        }
        // Opposite side: four buildings of seeded widths; the last one is residential
        // (it carries the street name plate).
        let raw: Vec<f32> = (0..4).map(|i| 9.0 + 4.0 * self.asm.rand(3, i)).collect();
        let total: f32 = raw.iter().sum();
        let mut x = -STREET_END;
        for (i, w) in raw.iter().enumerate() {
            let width = w / total * 2.0 * STREET_END;
            let key = 20 + i as i32;
            let ground = if i == 3 || self.asm.rand(key, 0) < 0.35 {
                Ground::Residential
            } else {
                Ground::Shop
            };
            let plan = self.plan(key, width, ground);
            let xf = Mat4::from_translation(v(x + width * 0.5, PAVE_Y, SOUTH_Z));
            self.building(&format!("building_south_{i}"), &plan, xf);
            x += width;
        }
        // The buildings closing both cross streets, facing the street's ends.
        for (i, s) in [-1.0f32, 1.0].into_iter().enumerate() {
            let key = 30 + i as i32;
            let plan = self.plan(key, 2.0 * GROUND_HALF_Z, Ground::Residential);
            let xf = Mat4::from_rotation_translation(
                rot(Vec3::Y, -0.25 * s),
                v(s * CROSS_X, PAVE_Y, 0.0),
            );
            self.building(&format!("building_end_{i}"), &plan, xf);
        }
    }

    /// One building: local frame with the facade in z = 0 facing +Z, x across the facade,
    /// y up from the pavement; `xf` places it in the world.
    fn building(&mut self, name: &str, plan: &Plan, xf: Mat4) {
        let m = BuildingMats {
            facade: self.pick(Role::Facade),
            trim: self.pick(Role::Trim),
            cornice: self.pick(Role::Cornice),
            glass: self.pick(Role::Glass),
            frame: self.pick(Role::WindowFrame),
            railing: self.pick(Role::Railing),
            roof: self.pick(Role::Roof),
            shutter: plan.shutters.then(|| self.pick(Role::Shutter)),
            balcony: (plan.balcony || plan.top_balcony).then(|| self.pick(Role::Balcony)),
            flowers: plan
                .flower_boxes
                .then(|| (self.pick(Role::Planter), self.pick(Role::Flowers))),
        };
        let hw = plan.width * 0.5;
        let bays = ((plan.width / 2.4).round() as usize).max(1);
        let bw = plan.width / bays as f32;
        let ww = (bw * 0.48).clamp(0.7, 1.25);
        let centres: Vec<f32> = (0..bays).map(|i| -hw + (i as f32 + 0.5) * bw).collect();
        let top = GROUND_H + plan.upper as f32 * STOREY_H;
        let mut parts = Vec::new();
        // The body behind the facade and under the mansard (seen at the street's ends).
        parts.push(block(m.facade, v(-hw, -0.3, -DEPTH), v(hw, top, -WALL_T)));
        parts.push(block(m.facade, v(-hw, top, -DEPTH), v(hw, top + 2.7, -1.4)));
        match plan.ground {
            Ground::Residential => {
                self.residential_ground(plan, &m, &centres, ww, &mut parts, xf);
            }
            Ground::Cafe | Ground::Shop => self.shopfront(plan, &m, &mut parts),
        }
        parts.push(cuboid(
            m.trim,
            v(plan.width, 0.3, 0.3),
            v(0.0, GROUND_H, 0.05),
        ));
        for f in 0..plan.upper {
            self.storey(plan, &m, f, &centres, ww, &mut parts, xf);
        }
        self.roof(plan, &m, &centres, top, &mut parts);
        let parts = parts
            .into_iter()
            .map(|(d, i)| (d.transformed(xf), i))
            .collect();
        self.asm.fixed(name, parts);
    }

    /// Remembers the facade point `(x, y)` (local) as a spot for an extra prop.
    fn slot(&mut self, xf: Mat4, x: f32, y: f32, width: f32, rank: u32) {
        let key = self.slots.len() as u32;
        self.slots.push(WallSlot {
            frame: xf * Mat4::from_translation(v(x, y, 0.0)),
            width,
            rank,
            key,
        });
    }

    /// One upper storey: wall with window openings, windows, shutters, sills, railings,
    /// balconies and flower boxes.
    #[expect(
        clippy::too_many_arguments,
        reason = "a storey is placed from its building's plan, materials, floor, bays and frame"
    )]
    fn storey(
        &mut self,
        plan: &Plan,
        m: &BuildingMats,
        f: u32,
        centres: &[f32],
        ww: f32,
        parts: &mut Vec<Part>,
        xf: Mat4,
    ) {
        let hw = plan.width * 0.5;
        let y0 = GROUND_H + f as f32 * STOREY_H;
        let last = f + 1 == plan.upper;
        let balcony = m
            .balcony
            .filter(|_| (f == 0 && plan.balcony) || (f > 0 && last && plan.top_balcony));
        let french = f == 0 || balcony.is_some();
        let (sill, wh) = match (french, last) {
            (true, true) => (0.12, 2.1),
            (true, false) => (0.12, 2.35),
            (false, true) => (0.9, 1.55),
            (false, false) => (0.8, 1.85),
        };
        let yb = y0 + sill;
        let openings: Vec<[f32; 4]> = centres
            .iter()
            .map(|&c| [c - ww * 0.5, c + ww * 0.5, yb, yb + wh])
            .collect();
        wall_with_openings(m.facade, hw, y0, y0 + STOREY_H, &openings, parts);
        if f > 0 {
            parts.push(cuboid(m.trim, v(plan.width, 0.14, 0.16), v(0.0, y0, 0.02)));
        }
        for &c in centres {
            window(parts, m, c, yb, ww, wh, 0.0);
            if let Some(s) = m.shutter {
                for side in [-1.0, 1.0] {
                    parts.push(cuboid(
                        s,
                        v(ww * 0.5, wh, 0.04),
                        v(c + side * (ww * 0.75 + 0.02), yb + wh * 0.5, 0.03),
                    ));
                }
            }
            if !french {
                parts.push(cuboid(
                    m.trim,
                    v(ww + 0.24, 0.08, 0.5),
                    v(c, yb - 0.04, -0.12),
                ));
            } else if balcony.is_none() {
                let (a, b) = (
                    v(c - ww * 0.5 - 0.05, yb, 0.07),
                    v(c + ww * 0.5 + 0.05, yb, 0.07),
                );
                railing(parts, m.railing, a, b, 0.9);
            }
            if f == 1
                && let Some((planter, flowers)) = m.flowers
            {
                parts.push(cuboid(planter, v(ww, 0.2, 0.22), v(c, yb + 0.1, 0.2)));
                parts.push(ellipsoid(
                    flowers,
                    v(ww * 0.48, 0.14, 0.12),
                    v(c, yb + 0.22, 0.2),
                ));
            }
        }
        if let Some(slab) = balcony {
            let depth = 0.85;
            parts.push(cuboid(
                slab,
                v(plan.width - 0.2, 0.16, depth),
                v(0.0, y0, depth * 0.5),
            ));
            for pair in centres.windows(2) {
                let x = (pair[0] + pair[1]) * 0.5;
                parts.push(cuboid(
                    slab,
                    v(0.14, 0.3, depth - 0.15),
                    v(x, y0 - 0.23, (depth - 0.15) * 0.5),
                ));
            }
            let (x0, x1, z) = (-hw + 0.15, hw - 0.15, depth - 0.06);
            let y = y0 + 0.08;
            railing(parts, m.railing, v(x0, y, z), v(x1, y, z), 0.95);
            railing(parts, m.railing, v(x0, y, 0.0), v(x0, y, z), 0.95);
            railing(parts, m.railing, v(x1, y, 0.0), v(x1, y, z), 0.95);
        }
        // Piers between windows take extra props; low, bare ones first.
        let rank = f * 2 + u32::from(balcony.is_some()) * 3 + u32::from(m.shutter.is_some()) * 4;
        for pair in centres.windows(2) {
            let x = (pair[0] + pair[1]) * 0.5;
            let gap = pair[1] - pair[0] - ww;
            self.slot(xf, x, yb + wh * 0.55, gap - 0.1, rank + 1);
        }
    }

    /// A residential ground floor: carriage door, barred windows, stone plinth.
    fn residential_ground(
        &mut self,
        plan: &Plan,
        m: &BuildingMats,
        centres: &[f32],
        ww: f32,
        parts: &mut Vec<Part>,
        xf: Mat4,
    ) {
        let hw = plan.width * 0.5;
        let door = self.pick(Role::Door);
        let plinth = self.pick(Role::Plinth);
        let bw = plan.width / centres.len() as f32;
        let dw = (bw - 0.4).clamp(1.0, 2.0);
        let door_i = (self.asm.rand(plan.key, 20) * centres.len() as f32) as usize;
        let door_i = door_i.min(centres.len().saturating_sub(1));
        let (sill, wh) = (1.2, 2.2);
        let openings: Vec<[f32; 4]> = centres
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                if i == door_i {
                    [c - dw * 0.5, c + dw * 0.5, 0.0, 3.4]
                } else {
                    [c - ww * 0.5, c + ww * 0.5, sill, sill + wh]
                }
            })
            .collect();
        wall_with_openings(m.facade, hw, 0.0, GROUND_H, &openings, parts);
        for (i, &c) in centres.iter().enumerate() {
            if i == door_i {
                for side in [-1.0, 1.0] {
                    parts.push(cuboid(
                        door,
                        v(dw * 0.5 - 0.02, 3.0, 0.08),
                        v(c + side * dw * 0.25, 1.5, -0.24),
                    ));
                }
                parts.push(cuboid(m.frame, v(dw, 0.08, 0.12), v(c, 3.04, -0.24)));
                parts.push(cuboid(m.glass, v(dw, 0.36, 0.02), v(c, 3.22, -0.26)));
                continue;
            }
            window(parts, m, c, sill, ww, wh, 0.0);
            let bars = ((ww / 0.13).round() as u32).max(2);
            for k in 1..bars {
                let x = c - ww * 0.5 + ww * k as f32 / bars as f32;
                parts.push(cuboid(
                    m.railing,
                    v(0.02, wh, 0.02),
                    v(x, sill + wh * 0.5, 0.04),
                ));
            }
            for y in [sill + 0.15, sill + wh - 0.15] {
                parts.push(cuboid(m.railing, v(ww, 0.03, 0.02), v(c, y, 0.04)));
            }
            parts.push(cuboid(
                m.trim,
                v(ww + 0.24, 0.08, 0.5),
                v(c, sill - 0.04, -0.12),
            ));
        }
        // Plinth on both sides of the door.
        let (d0, d1) = (centres[door_i] - dw * 0.5, centres[door_i] + dw * 0.5);
        for (x0, x1) in [(-hw, d0), (d1, hw)] {
            if x1 - x0 > 0.05 {
                parts.push(block(plinth, v(x0, 0.0, 0.0), v(x1, 0.7, 0.06)));
            }
        }
        for (i, pair) in centres.windows(2).enumerate() {
            if i != door_i && i + 1 != door_i {
                let x = (pair[0] + pair[1]) * 0.5;
                self.slot(xf, x, 2.4, pair[1] - pair[0] - ww - 0.1, 0);
            }
        }
    }

    /// A shop or café front: glazed bays between pilasters, a door, a fascia with the
    /// name, spotlights, a hanging sign and an awning (the café's is deep, with string
    /// lights, a clock and medallions).
    fn shopfront(&mut self, plan: &Plan, m: &BuildingMats, parts: &mut Vec<Part>) {
        let cafe = plan.ground == Ground::Cafe;
        let hw = plan.width * 0.5;
        let pier = 0.5;
        let ow = plan.width - 2.0 * pier;
        wall_with_openings(
            m.facade,
            hw,
            0.0,
            GROUND_H,
            &[[-hw + pier, hw - pier, 0.0, 3.9]],
            parts,
        );
        let front = self.pick(Role::Shopfront);
        let door = self.pick(Role::Door);
        let nb = ((ow / 2.2).round() as usize).max(2);
        let sb = ow / nb as f32;
        let door_bay = if cafe {
            nb / 2
        } else if self.asm.rand(plan.key, 21) < 0.5 {
            0
        } else {
            nb - 1
        };
        // Fascia with its moulding, and the header behind it.
        parts.push(cuboid(front, v(ow + 0.3, 0.8, 0.16), v(0.0, 3.5, 0.05)));
        parts.push(cuboid(front, v(ow + 0.45, 0.08, 0.28), v(0.0, 3.94, 0.06)));
        parts.push(cuboid(front, v(ow, 0.8, 0.4), v(0.0, 3.5, -0.2)));
        for i in 0..=nb {
            let x = -ow * 0.5 + i as f32 * sb;
            parts.push(cuboid(front, v(0.2, 3.1, 0.22), v(x, 1.55, -0.05)));
        }
        for i in 0..nb {
            let cx = -ow * 0.5 + (i as f32 + 0.5) * sb;
            let inner = sb - 0.2;
            if i == door_bay {
                let dw = inner.min(1.8);
                parts.push(cuboid(door, v(dw, 2.6, 0.06), v(cx, 1.3, -0.2)));
                if inner - dw > 0.05 {
                    for side in [-1.0, 1.0] {
                        parts.push(cuboid(
                            front,
                            v((inner - dw) * 0.5, 2.6, 0.08),
                            v(cx + side * (dw + inner) * 0.25, 1.3, -0.18),
                        ));
                    }
                }
                parts.push(cuboid(front, v(inner, 0.08, 0.1), v(cx, 2.64, -0.18)));
                parts.push(cuboid(m.glass, v(inner, 0.42, 0.02), v(cx, 2.89, -0.2)));
            } else {
                parts.push(cuboid(front, v(inner, 0.6, 0.1), v(cx, 0.3, -0.12)));
                parts.push(cuboid(m.glass, v(inner, 2.5, 0.02), v(cx, 1.85, -0.18)));
                parts.push(cuboid(front, v(inner, 0.06, 0.08), v(cx, 2.5, -0.15)));
            }
        }
        // Spotlights over the fascia.
        let spot = self.pick(Role::Spotlight);
        let spots: &[f32] = if cafe {
            &[-0.36, -0.12, 0.12, 0.36]
        } else {
            &[-0.3, 0.3]
        };
        for &t in spots {
            let x = t * ow;
            parts.push(rod(spot, 0.015, v(x, 4.08, 0.0), v(x, 4.08, 0.5)));
            parts.push(rod(spot, 0.05, v(x, 4.1, 0.56), v(x, 3.95, 0.44)));
        }
        // The name on the fascia and a hanging sign at one end.
        let blade_x = hw - 0.22;
        if cafe {
            let letters = self.pick(Role::Letters);
            parts.push(decal(letters, 1.7, 0.72, v(0.0, 3.5, 0.135)));
            let sign = self.pick(Role::CafeSign);
            self.blade_sign(parts, sign, blade_x);
            let clock = self.pick(Role::Clock);
            let bracket = self.pick(Role::Bracket);
            let x = -blade_x;
            parts.push(rod(bracket, 0.025, v(x, 4.25, 0.0), v(x, 4.25, 0.75)));
            parts.push(rod(bracket, 0.015, v(x, 3.9, 0.0), v(x, 4.25, 0.4)));
            for side in [-1.0f32, 1.0] {
                parts.push(roundel(
                    clock,
                    0.28,
                    0.04,
                    v(x + side * 0.021, 3.85, 0.5),
                    side * 0.25,
                ));
            }
            let ornament = self.pick(Role::Ornament);
            for side in [-1.0, 1.0] {
                parts.push(roundel(
                    ornament,
                    0.2,
                    0.06,
                    v(side * (hw - 0.25), 3.3, 0.03),
                    0.0,
                ));
            }
        } else {
            let sign = self.pick(Role::ShopSign);
            parts.push(decal(sign, 0.75, 0.72, v(0.0, 3.5, 0.135)));
            let x = if door_bay == 0 { -blade_x } else { blade_x };
            self.blade_sign(parts, sign, x);
        }
        if cafe || plan.awning {
            self.awning(parts, cafe, ow);
        }
    }

    /// A double-sided sign hanging from a bracket at `x`, perpendicular to the facade.
    fn blade_sign(&mut self, parts: &mut Vec<Part>, sign: Mtl, x: f32) {
        let bracket = self.pick(Role::Bracket);
        let chain = self.pick(Role::Chain);
        let y = 4.25;
        parts.push(rod(bracket, 0.02, v(x, y, 0.0), v(x, y, 1.1)));
        parts.push(rod(bracket, 0.012, v(x, y - 0.35, 0.0), v(x, y, 0.6)));
        for z in [0.33, 0.97] {
            parts.push(rod(chain, 0.008, v(x, y, z), v(x, y - 0.13, z)));
        }
        parts.push(cuboid(sign, v(0.05, 0.7, 0.7), v(x, y - 0.13 - 0.35, 0.65)));
    }

    /// A sloping awning with valance and arms over the shop front; the café's carries
    /// string lights along its edge.
    fn awning(&mut self, parts: &mut Vec<Part>, cafe: bool, ow: f32) {
        let cloth = self.pick(Role::Awning);
        let frame = self.pick(Role::AwningFrame);
        let depth = if cafe { 3.3 } else { 1.6 };
        let (y_wall, y_front) = (3.05, if cafe { 2.5 } else { 2.6 });
        let width = ow + 0.2;
        parts.push(beam(
            cloth,
            v(0.0, y_wall, 0.02),
            v(0.0, y_front, depth),
            width,
            0.03,
        ));
        parts.push(cuboid(
            cloth,
            v(width, 0.32, 0.02),
            v(0.0, y_front - 0.16, depth),
        ));
        parts.push(rod(
            frame,
            0.03,
            v(-width * 0.5, y_front - 0.03, depth - 0.03),
            v(width * 0.5, y_front - 0.03, depth - 0.03),
        ));
        let arms = ((width / 2.5).ceil() as usize).max(1) + 1;
        let xs: Vec<f32> = (0..arms)
            .map(|i| -width * 0.5 + 0.1 + (width - 0.2) * i as f32 / (arms - 1) as f32)
            .collect();
        for &x in &xs {
            parts.push(rod(
                frame,
                0.02,
                v(x, y_wall - 0.6, 0.0),
                v(x, y_front - 0.05, depth - 0.05),
            ));
        }
        if !cafe {
            return;
        }
        let bulbs = self.pick(Role::StringLights);
        let (y, z, sag) = (y_front - 0.34, depth + 0.03, 0.18);
        for pair in xs.windows(2) {
            let point = |t: f32| {
                v(
                    pair[0] + (pair[1] - pair[0]) * t,
                    y - sag * 4.0 * t * (1.0 - t),
                    z,
                )
            };
            let n = 8;
            for k in 0..n {
                let (a, b) = (point(k as f32 / n as f32), point((k + 1) as f32 / n as f32));
                parts.push(rod(bulbs, 0.006, a, b));
            }
            let count = (((pair[1] - pair[0]) / 0.45).round() as usize).max(1);
            for k in 0..count {
                let p = point((k as f32 + 0.5) / count as f32);
                parts.push(ellipsoid(bulbs, v(0.035, 0.045, 0.035), p - Vec3::Y * 0.05));
            }
        }
    }

    /// Cornice with dentils, mansard roof with dormers, chimneys and maybe an antenna.
    fn roof(
        &mut self,
        plan: &Plan,
        m: &BuildingMats,
        centres: &[f32],
        top: f32,
        parts: &mut Vec<Part>,
    ) {
        let w = plan.width;
        let hw = w * 0.5;
        parts.push(cuboid(m.cornice, v(w, 0.2, 0.4), v(0.0, top - 0.5, 0.0)));
        parts.push(cuboid(m.cornice, v(w, 0.4, 0.6), v(0.0, top - 0.05, 0.1)));
        let n = ((w / 0.25) as usize).max(1);
        for i in 0..n {
            let x = -hw + (i as f32 + 0.5) * w / n as f32;
            parts.push(cuboid(
                m.cornice,
                v(0.1, 0.12, 0.12),
                v(x, top - 0.31, 0.26),
            ));
        }
        // Mansard: a steep lower slope and a gentle upper one.
        let (a, b, c) = (
            v(0.0, top + 0.15, 0.25),
            v(0.0, top + 2.7, -1.4),
            v(0.0, top + 3.3, -DEPTH),
        );
        parts.push(beam(m.roof, a, b, w, 0.12));
        parts.push(beam(m.roof, b, c, w, 0.12));
        let every = if centres.len() > 3 { 2 } else { 1 };
        for (i, &x) in centres.iter().enumerate() {
            if (i + plan.key as usize).is_multiple_of(every) {
                dormer(parts, m, x, top);
            }
        }
        let chimney = self.pick(Role::Chimney);
        let xs: Vec<f32> = if w > 9.0 {
            vec![-hw * 0.55, hw * 0.45]
        } else {
            vec![(self.asm.rand(plan.key, 30) - 0.5) * hw]
        };
        for x in xs {
            parts.push(cuboid(chimney, v(0.7, 1.8, 1.0), v(x, top + 3.5, -4.5)));
            parts.push(cuboid(m.trim, v(0.85, 0.1, 1.15), v(x, top + 4.45, -4.5)));
            for dx in [-0.17, 0.17] {
                parts.push(drum(chimney, 0.08, 0.35, v(x + dx, top + 4.5, -4.5)));
            }
        }
        if plan.antenna {
            let ant = self.pick(Role::Antenna);
            let x = (self.asm.rand(plan.key, 31) - 0.5) * hw;
            let base = v(x, top + 3.0, -6.0);
            parts.push(rod(ant, 0.03, base, base + Vec3::Y * 2.6));
            for (h, len) in [(2.0, 1.4), (2.3, 1.1), (2.55, 0.8)] {
                let p = base + Vec3::Y * h;
                parts.push(rod(
                    ant,
                    0.012,
                    p - Vec3::X * (len * 0.5),
                    p + Vec3::X * (len * 0.5),
                ));
            }
        }
    }

    /// The café terrace: tables (some with cloths, ashtrays and bottles) and chairs (some
    /// with cushions) in two rows, glass wind screens at both ends, planters and a menu
    /// board.
    fn terrace(&mut self) {
        let top = self.pick(Role::TableTop);
        let tframe = self.pick(Role::TableFrame);
        let cframe = self.pick(Role::ChairFrame);
        let seat = self.pick(Role::ChairSeat);
        let cloth = self.pick(Role::Tablecloth);
        let cushion = self.pick(Role::Cushion);
        let ash = self.pick(Role::Ashtray);
        let glass = self.pick(Role::Glass);
        let label = self.pick(Role::BottleLabel);
        let cap = self.pick(Role::BottleCap);

        let table_parts = |cloth: Option<Mtl>| {
            let mut p = vec![
                drum(top, 0.32, 0.03, v(0.0, 0.74, 0.0)),
                rod(tframe, 0.03, v(0.0, 0.03, 0.0), v(0.0, 0.74, 0.0)),
                drum(tframe, 0.22, 0.03, Vec3::ZERO),
            ];
            if let Some(c) = cloth {
                p.push(drum(c, 0.37, 0.185, v(0.0, 0.6, 0.0)));
            }
            p
        };
        let chair_parts = |cushion: Option<Mtl>| {
            let mut p = vec![cuboid(seat, v(0.42, 0.04, 0.42), v(0.0, 0.46, 0.0))];
            for (sx, sz) in [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
                p.push(rod(
                    cframe,
                    0.013,
                    v(0.2 * sx, 0.0, 0.2 * sz),
                    v(0.18 * sx, 0.45, 0.18 * sz),
                ));
            }
            for sx in [-1.0, 1.0] {
                p.push(rod(
                    cframe,
                    0.013,
                    v(0.18 * sx, 0.45, -0.18),
                    v(0.17 * sx, 0.9, -0.25),
                ));
                p.push(rod(
                    cframe,
                    0.008,
                    v(0.19 * sx, 0.18, -0.19),
                    v(0.19 * sx, 0.18, 0.19),
                ));
            }
            p.push(beam(
                seat,
                v(0.0, 0.66, -0.2),
                v(0.0, 0.88, -0.245),
                0.36,
                0.025,
            ));
            if let Some(c) = cushion {
                p.push(cuboid(c, v(0.38, 0.05, 0.38), v(0.0, 0.505, 0.0)));
            }
            p
        };
        let table = self.asm.mesh("terrace_table", table_parts(None));
        let cloth_table = self
            .asm
            .mesh("terrace_table_cloth", table_parts(Some(cloth)));
        let chair = self.asm.mesh("terrace_chair", chair_parts(None));
        let cushion_chair = self
            .asm
            .mesh("terrace_chair_cushion", chair_parts(Some(cushion)));
        let bottle = self.asm.mesh(
            "bottle",
            vec![
                drum(glass, 0.036, 0.2, Vec3::ZERO),
                ellipsoid(glass, v(0.036, 0.04, 0.036), v(0.0, 0.2, 0.0)),
                drum(glass, 0.014, 0.1, v(0.0, 0.2, 0.0)),
                drum(label, 0.0375, 0.09, v(0.0, 0.05, 0.0)),
                drum(cap, 0.016, 0.025, v(0.0, 0.3, 0.0)),
            ],
        );
        let ashtray = self
            .asm
            .mesh("ashtray", vec![drum(ash, 0.06, 0.025, Vec3::ZERO)]);

        let xs = [-5.6, -3.8, -2.0, 2.0, 3.8, 5.6];
        for (r, z) in [8.3f32, 6.45].into_iter().enumerate() {
            for (i, &x) in xs.iter().enumerate() {
                let k = (r * xs.len() + i) as i32;
                let jitter = |s: &Street, j: i32| (s.asm.rand(100 + k, j) - 0.5) * 0.16;
                let pos = v(x + jitter(self, 0), PAVE_Y, z + jitter(self, 1));
                let with_cloth = (k + r as i32) % 2 == 0;
                let mesh = if with_cloth { cloth_table } else { table };
                let yaw = self.asm.rand(100 + k, 2);
                self.asm.put("table", mesh, pos, yaw, 1.0);
                for (c, dx) in [-0.36f32, 0.36].into_iter().enumerate() {
                    let mesh = if (k + c as i32) % 3 == 0 {
                        cushion_chair
                    } else {
                        chair
                    };
                    let yaw = 0.5 + jitter(self, 3 + c as i32) * 0.4;
                    self.asm
                        .put("chair", mesh, pos + v(dx, 0.0, 0.52), yaw, 1.0);
                }
                if k % 3 == 1 {
                    let yaw = jitter(self, 6) * 0.4;
                    self.asm
                        .put("chair", chair, pos + v(0.05, 0.0, -0.56), yaw, 1.0);
                }
                let surface = if with_cloth { 0.785 } else { 0.77 };
                let a = self.asm.rand(100 + k, 7);
                let (s, c) = sin_cos_turns(a);
                self.asm.put(
                    "ashtray",
                    ashtray,
                    pos + v(0.15 * s, surface, 0.15 * c),
                    a,
                    1.0,
                );
                if k % 3 == 0 {
                    self.asm.put(
                        "bottle",
                        bottle,
                        pos + v(-0.12 * s, surface, -0.12 * c),
                        0.0,
                        1.0,
                    );
                }
            }
        }

        // Low planters with flowers closing the terrace's ends.
        let box_m = self.pick(Role::Planter);
        let flowers = self.pick(Role::Flowers);
        let mut parts = Vec::new();
        for x in [-6.6f32, 6.6] {
            for k in 0..4 {
                let z = 5.75 + 1.05 * k as f32;
                parts.push(cuboid(box_m, v(0.45, 0.55, 0.98), v(x, PAVE_Y + 0.275, z)));
                parts.push(ellipsoid(
                    flowers,
                    v(0.2, 0.2, 0.46),
                    v(x, PAVE_Y + 0.58, z),
                ));
            }
        }
        // An A-frame menu board at the terrace's entrance, facing the street.
        let menu = self.pick(Role::MenuBoard);
        let base = v(0.0, PAVE_Y, 5.3);
        parts.push(tilted(
            menu,
            v(0.6, 0.95, 0.03),
            base + v(0.0, 0.47, -0.1),
            0.0,
            0.035,
        ));
        parts.push(tilted(
            menu,
            v(0.6, 0.95, 0.03),
            base + v(0.0, 0.47, 0.1),
            0.0,
            -0.035,
        ));
        self.asm.fixed("terrace", parts);
    }

    /// Lamps, bollards, a barrier, bins, an electrical cabinet, planters, crates and
    /// barrels, street name plates.
    fn furniture(&mut self) {
        let post = self.pick(Role::LampPost);
        let head = self.pick(Role::LampHead);
        let lamp = self.asm.mesh(
            "street_lamp",
            vec![
                drum(post, 0.17, 0.8, Vec3::ZERO),
                spire(post, 0.17, 0.5, 20, v(0.0, 0.8, 0.0)),
                drum(post, 0.065, 3.45, v(0.0, 0.8, 0.0)),
                hoop(post, 0.075, 0.025, v(0.0, 1.35, 0.0)),
                hoop(post, 0.075, 0.025, v(0.0, 4.1, 0.0)),
                drum(post, 0.13, 0.05, v(0.0, 4.2, 0.0)),
                (
                    cylinder(0.2, 0.5, 6, true, head.uv)
                        .transformed(Mat4::from_translation(v(0.0, 4.5, 0.0))),
                    head.index,
                ),
                spire(post, 0.3, 0.3, 6, v(0.0, 4.75, 0.0)),
                ellipsoid(post, Vec3::splat(0.05), v(0.0, 5.1, 0.0)),
            ],
        );
        let lamps = [
            (-10.0, KERB_Z + 0.65),
            (10.0, KERB_Z + 0.65),
            (-14.0, -KERB_Z - 0.65),
            (0.0, -KERB_Z - 0.65),
            (14.0, -KERB_Z - 0.65),
        ];
        for (x, z) in lamps {
            self.asm.put("street_lamp", lamp, v(x, PAVE_Y, z), 0.0, 1.0);
        }

        let bm = self.pick(Role::Bollard);
        let bollard = self.asm.mesh(
            "bollard",
            vec![
                drum(bm, 0.085, 0.75, Vec3::ZERO),
                ellipsoid(bm, Vec3::splat(0.095), v(0.0, 0.78, 0.0)),
                hoop(bm, 0.09, 0.015, v(0.0, 0.62, 0.0)),
            ],
        );
        let barrier_x = (4.0f32, 10.0f32);
        let near_lamp = |x: f32, z: f32| {
            lamps
                .iter()
                .any(|&(lx, lz)| (lx - x).abs() < 0.9 && lz.signum() == z.signum())
        };
        let mut k = 0;
        while k < 26 {
            let x = -20.4 + 1.7 * k as f32;
            k += 1;
            let south = -KERB_Z - 0.55;
            if !near_lamp(x, south) && !(barrier_x.0 - 0.6..=barrier_x.1 + 0.6).contains(&x) {
                self.asm
                    .put("bollard", bollard, v(x, PAVE_Y, south), 0.0, 1.0);
            }
            let north = KERB_Z + 0.55;
            if x.abs() > 11.0 && !near_lamp(x, north) {
                self.asm
                    .put("bollard", bollard, v(x, PAVE_Y, north), 0.0, 1.0);
            }
        }

        let bar = self.pick(Role::Barrier);
        let panel = self.asm.mesh(
            "barrier",
            vec![
                cuboid(bar, v(1.3, 0.7, 0.03), v(0.0, 0.55, 0.0)),
                rod(bar, 0.025, v(-0.68, 0.0, 0.0), v(-0.68, 1.0, 0.0)),
                rod(bar, 0.025, v(0.68, 0.0, 0.0), v(0.68, 1.0, 0.0)),
                rod(bar, 0.02, v(-0.68, 0.95, 0.0), v(0.68, 0.95, 0.0)),
            ],
        );
        let n = ((barrier_x.1 - barrier_x.0) / 1.4).round() as usize;
        for i in 0..n {
            let x = barrier_x.0 + 0.7 + 1.4 * i as f32;
            self.asm
                .put("barrier", panel, v(x, PAVE_Y, -KERB_Z - 0.5), 0.0, 1.0);
        }

        let bin_m = self.pick(Role::TrashCan);
        let bin = self.asm.mesh(
            "litter_bin",
            vec![
                rod(bin_m, 0.035, Vec3::ZERO, v(0.0, 1.05, 0.0)),
                drum(bin_m, 0.2, 0.55, v(0.0, 0.35, 0.23)),
                hoop(bin_m, 0.205, 0.015, v(0.0, 0.9, 0.23)),
            ],
        );
        self.asm
            .put("litter_bin", bin, v(-6.5, PAVE_Y, -KERB_Z - 0.6), 0.5, 1.0);
        self.asm.put(
            "litter_bin",
            bin,
            v(-13.0, PAVE_Y, NORTH_Z - 0.45),
            0.5,
            1.0,
        );
        self.asm
            .put("litter_bin", bin, v(18.0, PAVE_Y, SOUTH_Z + 0.45), 0.0, 1.0);

        let e = self.pick(Role::ElectricBox);
        let cabinet = self.asm.mesh(
            "electrical_cabinet",
            vec![
                cuboid(e, v(0.9, 1.3, 0.4), v(0.0, 0.65, 0.0)),
                cuboid(e, v(0.96, 0.05, 0.46), v(0.0, 1.325, 0.0)),
            ],
        );
        self.asm.put(
            "electrical_cabinet",
            cabinet,
            v(-17.5, PAVE_Y, SOUTH_Z + 0.25),
            0.0,
            1.0,
        );

        let pm = self.pick(Role::Planter);
        let flowers = self.pick(Role::Flowers);
        let planter = self.asm.mesh(
            "planter",
            vec![
                cuboid(pm, v(1.1, 0.5, 0.5), v(0.0, 0.25, 0.0)),
                ellipsoid(flowers, v(0.52, 0.22, 0.22), v(0.0, 0.52, 0.0)),
            ],
        );
        for (x, z, yaw) in [
            (-6.6, 5.3, 0.25),
            (6.6, 5.3, 0.25),
            (-9.0, SOUTH_Z + 0.35, 0.0),
            (8.0, SOUTH_Z + 0.35, 0.0),
        ] {
            self.asm.put("planter", planter, v(x, PAVE_Y, z), yaw, 1.0);
        }

        let crate_m = self.pick(Role::Crate);
        let crate_mesh = self.asm.mesh(
            "crate",
            vec![cuboid(crate_m, v(0.55, 0.32, 0.38), v(0.0, 0.16, 0.0))],
        );
        for (x, y, yaw) in [(14.2, 0.0, 0.02), (14.8, 0.0, -0.03), (14.5, 0.32, 0.05)] {
            self.asm.put(
                "crate",
                crate_mesh,
                v(x, PAVE_Y + y, NORTH_Z - 0.35),
                yaw,
                1.0,
            );
        }
        let wood = self.pick(Role::Barrel);
        let hoops = self.pick(Role::Hoop);
        let barrel = self.asm.mesh(
            "barrel",
            vec![
                drum(wood, 0.28, 0.85, Vec3::ZERO),
                hoop(hoops, 0.285, 0.014, v(0.0, 0.15, 0.0)),
                hoop(hoops, 0.285, 0.014, v(0.0, 0.7, 0.0)),
            ],
        );
        for (x, z) in [(15.9, NORTH_Z - 0.4), (16.55, NORTH_Z - 0.5)] {
            self.asm.put("barrel", barrel, v(x, PAVE_Y, z), 0.0, 1.0);
        }

        let plate = self.pick(Role::StreetSign);
        let y = PAVE_Y + 4.08;
        self.asm.fixed(
            "street_name_plates",
            vec![
                cuboid(
                    plate,
                    v(0.8, 0.45, 0.03),
                    v(-STREET_END + 0.7, y, NORTH_Z - 0.02),
                ),
                cuboid(
                    plate,
                    v(0.8, 0.45, 0.03),
                    v(STREET_END - 0.7, y, SOUTH_Z + 0.02),
                ),
            ],
        );
    }

    /// Puts every set no role took on an extra prop: on facade piers while they last,
    /// then on a stack of crates in front of the western cross-street building.
    fn extras(&mut self) {
        let unused: Vec<usize> = (0..self.pal.uses.len())
            .filter(|&i| self.pal.uses[i] == 0)
            .collect();
        if unused.is_empty() {
            return;
        }
        let mut slots = std::mem::take(&mut self.slots);
        let seed = self.asm.seed();
        // Low, bare piers first; among those, the ones nearest the terrace.
        slots.sort_by_key(|s| {
            let at = s.frame.w_axis.truncate() - v(0.0, 0.0, 5.0);
            (s.rank, (at.length() * 0.25) as u32, hash_u32(s.key ^ seed))
        });
        let mut parts = Vec::new();
        for (k, &set) in unused.iter().enumerate() {
            if let Some(u) = self.pal.uses.get_mut(set) {
                *u += 1;
            }
            match slots.get(k) {
                Some(slot) => {
                    for (d, i) in self.wall_prop(set, slot.width) {
                        parts.push((d.transformed(slot.frame), i));
                    }
                }
                None => {
                    let j = k - slots.len();
                    // 60 crates along the pavement, three rows deep, then the next layer.
                    let pos = v(
                        -CROSS_X + 0.35 + ((j / 60) % 3) as f32 * 0.55,
                        PAVE_Y + 0.25 + (j / 180) as f32 * 0.5,
                        -20.0 + (j % 60) as f32 * 0.65,
                    );
                    let m = Mtl {
                        index: set,
                        uv: UvMode::Unit,
                    };
                    parts.push(cuboid(m, Vec3::splat(0.5), pos));
                }
            }
        }
        self.asm.fixed("extra_props", parts);
    }

    /// A wall-mounted prop showing `set`, shaped after its kind, in a slot frame (origin
    /// on the wall, +Z out) of the given free `width`.
    fn wall_prop(&mut self, set: usize, width: f32) -> Vec<Part> {
        let s = width.clamp(0.4, 0.8);
        let unit = Mtl {
            index: set,
            uv: UvMode::Unit,
        };
        let tiled = Mtl {
            index: set,
            uv: tile(0.5),
        };
        match self.pal.kinds.get(set).copied().unwrap_or(Kind::Misc) {
            Kind::Light => {
                let br = self.pick(Role::Bracket);
                vec![
                    rod(br, 0.015, v(0.0, 0.35, 0.0), v(0.0, 0.35, 0.38)),
                    rod(br, 0.01, v(0.0, 0.35, 0.35), v(0.0, 0.24, 0.35)),
                    (
                        cylinder(0.1, 0.28, 6, true, UvMode::Unit)
                            .transformed(Mat4::from_translation(v(0.0, 0.1, 0.35))),
                        set,
                    ),
                    spire(br, 0.14, 0.12, 6, v(0.0, 0.24, 0.35)),
                ]
            }
            Kind::Fabric => {
                let br = self.pick(Role::Bracket);
                vec![
                    rod(
                        br,
                        0.015,
                        v(-s * 0.5 - 0.05, 0.75, 0.12),
                        v(s * 0.5 + 0.05, 0.75, 0.12),
                    ),
                    cuboid(unit, v(s, 1.4, 0.012), v(0.0, 0.05, 0.12)),
                ]
            }
            Kind::Plant => {
                let box_m = self.pick(Role::Planter);
                vec![
                    cuboid(box_m, v(s, 0.22, 0.22), v(0.0, -0.6, 0.15)),
                    ellipsoid(tiled, v(s * 0.5, 0.16, 0.12), v(0.0, -0.45, 0.15)),
                ]
            }
            Kind::Roof => vec![beam(
                tiled,
                v(0.0, 0.45, 0.0),
                v(0.0, 0.3, 0.55),
                s + 0.1,
                0.04,
            )],
            Kind::Metal => vec![cuboid(unit, v(s * 0.8, s, 0.16), v(0.0, 0.0, 0.08))],
            Kind::Glass => vec![cuboid(unit, v(s * 0.8, s * 1.1, 0.12), v(0.0, 0.0, 0.06))],
            Kind::Wood | Kind::Stone | Kind::Sign | Kind::Misc => {
                vec![cuboid(unit, v(s, s, 0.04), v(0.0, 0.0, 0.05))]
            }
        }
    }
}

/// Wall pieces of a band from `y0` to `y1` across `−hw..hw` (local facade frame) around
/// rectangular `openings` `[x0, x1, y_bottom, y_top]`, sorted by x and not overlapping.
fn wall_with_openings(
    m: Mtl,
    hw: f32,
    y0: f32,
    y1: f32,
    openings: &[[f32; 4]],
    parts: &mut Vec<Part>,
) {
    let mut x = -hw;
    let mut piece = |x0: f32, x1: f32, ya: f32, yb: f32| {
        if x1 - x0 > 1e-3 && yb - ya > 1e-3 {
            parts.push(block(m, v(x0, ya, -WALL_T), v(x1, yb, 0.0)));
        }
    };
    for o in openings {
        piece(x, o[0], y0, y1);
        piece(o[0], o[1], y0, o[2]);
        piece(o[0], o[1], o[3], y1);
        x = o[1];
    }
    piece(x, hw, y0, y1);
}

/// A recessed window in the building's glass and frame materials: glass, frame, mullion
/// and transom, in an opening of `w` × `h` whose bottom centre is `(cx, yb)`; `z0` is the
/// facade plane.
fn window(parts: &mut Vec<Part>, m: &BuildingMats, cx: f32, yb: f32, w: f32, h: f32, z0: f32) {
    let (glass, frame) = (m.glass, m.frame);
    let (f, d, z) = (0.07, 0.1, z0 - 0.2);
    let yc = yb + h * 0.5;
    parts.push(cuboid(glass, v(w, h, 0.02), v(cx, yc, z0 - 0.24)));
    for s in [-1.0, 1.0] {
        parts.push(cuboid(frame, v(f, h, d), v(cx + s * (w - f) * 0.5, yc, z)));
    }
    for y in [yb + f * 0.5, yb + h - f * 0.5] {
        parts.push(cuboid(frame, v(w, f, d), v(cx, y, z)));
    }
    parts.push(cuboid(frame, v(0.05, h - 2.0 * f, 0.08), v(cx, yc, z)));
    parts.push(cuboid(
        frame,
        v(w - 2.0 * f, 0.05, 0.08),
        v(cx, yb + h * 0.72, z),
    ));
}

/// A dormer on the mansard above the bay at `x`: body, window and a hipped roof.
fn dormer(parts: &mut Vec<Part>, m: &BuildingMats, x: f32, top: f32) {
    let (w, h) = (1.1, 1.5);
    let y0 = top + 0.4;
    parts.push(cuboid(m.facade, v(w, h, 1.3), v(x, y0 + h * 0.5, -0.67)));
    window(parts, m, x, y0 + 0.25, 0.7, 1.05, 0.24);
    // A four-sided cone turned by 1/8 is a square pyramid; stretch it over the body.
    let r = 0.85;
    let half_side = r * std::f32::consts::FRAC_1_SQRT_2;
    let xf = Mat4::from_translation(v(x, y0 + h + 0.25, -0.6))
        * Mat4::from_scale(v((w * 0.5 + 0.08) / half_side, 1.0, 0.75 / half_side))
        * Mat4::from_quat(rot(Vec3::Y, 0.125));
    parts.push((cone(r, 0.5, 4, m.roof.uv).transformed(xf), m.roof.index));
}
