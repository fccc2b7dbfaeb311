//! The built-in "toy shop" scene generator.
//!
//! Owns [`generate`], which writes a complete, self-contained glTF 2.0 scene of a small
//! toy shop into a folder: `toyshop.gltf`, `toyshop.bin` and, under `textures/`, one
//! procedurally painted PBR texture set per material (`<mat>_basecolor.png` in sRGB,
//! `<mat>_normal.png` tangent-space with the OpenGL convention, `<mat>_orm.png` with
//! occlusion/roughness/metallic in R/G/B, referenced both as occlusion and as
//! metallic-roughness texture like the Khronos FlightHelmet).
//!
//! The shop is y-up, in metres: an 8 × 6 m room with 3 m walls and no ceiling (so the
//! renderer's sun lights it from above), shelves along two walls filled with toys, a
//! counter with a till, a display table, a rug with a teddy bear, a train, letter blocks
//! and balls, and cardboard boxes. Two cameras are included: `overview` (the whole shop
//! from a corner at eye height) and `shelf` (a close look at the back shelves).
//!
//! Output is a pure function of [`ToyshopOptions`]: the layout is driven by integer
//! hashes of the seed and the textures by [`super::procedural`], so the same options give
//! the same bytes. Texture sets are painted on all available cores.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use glam::{Mat4, Quat, Vec3};
use image::{ExtendedColorType, ImageEncoder, codecs::png::PngEncoder};

use crate::io::write_atomic;
use crate::texture::srgb::SrgbEncoder;

use super::gltf_builder::{
    GltfBuilder, GltfWriteError, MaterialDesc, MeshData, UvMode, box_mesh, cone, cylinder,
    look_rotation, plane, torus, uv_sphere,
};
use super::kit::{Assembly, Mtl, Part, Segments, cuboid, rot};
use super::procedural::{
    Cellular, cellular, derive_seed, fbm, hash_str, hash_u32, hash2, lerp, lerp3,
    normal_map_from_height, scale3, scratches, sin_cos_turns, smoothstep, srgb_hex, unit_f32,
    unorm8, value_noise,
};
use materials::*;

mod materials;

/// The texture sizes [`generate`] takes: a power of two in this range.
pub const TEXTURE_SIZES: std::ops::RangeInclusive<u32> = 4..=4096;

/// Whether [`generate`] takes textures of side `size`.
pub fn valid_texture_size(size: u32) -> bool {
    TEXTURE_SIZES.contains(&size) && size.is_power_of_two()
}

/// Options of [`generate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToyshopOptions {
    /// Edge length of every generated texture in pixels: a power of two in `4..=4096`.
    pub texture_size: u32,
    /// Seed of the layout and texture variation.
    pub seed: u64,
}

impl Default for ToyshopOptions {
    fn default() -> Self {
        Self {
            texture_size: 512,
            seed: 1,
        }
    }
}

/// Errors raised by [`generate`]. Every variant names the file or option involved.
#[derive(Debug, thiserror::Error)]
pub enum ToyshopError {
    /// `texture_size` is not a power of two between 4 and 4096.
    #[error("invalid texture_size {0}: must be a power of two between 4 and 4096")]
    TextureSize(u32),
    /// A folder or file could not be created or written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A PNG could not be encoded.
    #[error("cannot encode {path}: {source}")]
    Encode {
        /// The image file.
        path: PathBuf,
        /// The underlying error.
        source: image::ImageError,
    },
    /// The glTF document or its buffer could not be written.
    #[error(transparent)]
    Gltf(#[from] GltfWriteError),
}

/// Version of the generator's output. Bump it whenever the generated scene changes, so
/// that cached copies of the built-in scene are regenerated.
pub const GENERATOR_VERSION: u32 = 2;

/// Writes the toy shop into `out_dir` (created if missing) and returns the path of
/// `out_dir/toyshop.gltf`. Textures go to `out_dir/textures/`.
pub fn generate(out_dir: &Path, opts: &ToyshopOptions) -> Result<PathBuf, ToyshopError> {
    let size = opts.texture_size;
    if !valid_texture_size(size) {
        return Err(ToyshopError::TextureSize(size));
    }
    let tex_dir = out_dir.join(TEXTURE_DIR);
    std::fs::create_dir_all(&tex_dir).map_err(|source| ToyshopError::Io {
        path: tex_dir.clone(),
        source,
    })?;
    paint_all(&tex_dir, size, opts.seed)?;
    let shop = build_shop(opts.seed);
    let path = shop.write(out_dir, "toyshop")?;
    log::info!(
        "toy shop: {} materials, {} triangles, {size}² textures → {}",
        shop.material_count(),
        shop.instanced_triangle_count(),
        path.display()
    );
    Ok(path)
}

/// Texture folder, relative to the glTF file.
const TEXTURE_DIR: &str = "textures";

// ---------------------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------------------

/// Segment counts of the shop's round shapes.
const SEGMENTS: Segments = Segments {
    steps: &[(0.08, 24), (0.025, 16)],
    least: 10,
};

impl From<Mat> for Mtl {
    /// The material at its real-world texture density.
    fn from(m: Mat) -> Mtl {
        Mtl {
            index: m.index(),
            uv: m.uv(),
        }
    }
}

/// A box of `size` centred at `center` whose every face shows the whole texture.
fn labelled(m: Mat, size: Vec3, center: Vec3) -> Part {
    (
        box_mesh(size, UvMode::Unit).transformed(Mat4::from_translation(center)),
        m.index(),
    )
}

/// A sphere of radius `r` stretched by `stretch`, tilted by `tilt` turns around Z and
/// centred at `center`.
fn ball(m: Mat, r: f32, center: Vec3, stretch: Vec3, tilt: f32) -> Part {
    let s = SEGMENTS.for_radius(r);
    let xf = Mat4::from_scale_rotation_translation(stretch, rot(Vec3::Z, tilt), center);
    (
        uv_sphere(r, s, s * 2 / 3, m.uv()).transformed(xf),
        m.index(),
    )
}

/// A capped cylinder of radius `r` and length `len` along `axis` (X, Y or Z), centred at
/// `center`.
fn rod(m: Mat, r: f32, len: f32, center: Vec3, axis: Vec3) -> Part {
    let q = if axis == Vec3::X {
        rot(Vec3::Z, 0.25)
    } else if axis == Vec3::Z {
        rot(Vec3::X, 0.25)
    } else {
        Quat::IDENTITY
    };
    let xf = Mat4::from_rotation_translation(q, center);
    (
        cylinder(r, len, SEGMENTS.for_radius(r), true, m.uv()).transformed(xf),
        m.index(),
    )
}

/// A horizontal ring (torus) centred at `center`.
fn ring(m: Mat, major: f32, minor: f32, center: Vec3) -> Part {
    (
        torus(
            major,
            minor,
            SEGMENTS.for_radius(major) + 8,
            SEGMENTS.for_radius(minor).min(12),
            m.uv(),
        )
        .transformed(Mat4::from_translation(center)),
        m.index(),
    )
}

/// A unit letter block (1 m cube, centred) showing `letters` on its faces in the order
/// +X, −X, +Y, −Y, +Z, −Z.
fn letter_block(letters: [u8; 6]) -> MeshData {
    let mut m = box_mesh(Vec3::ONE, UvMode::Unit);
    for (face, &letter) in letters.iter().enumerate() {
        let cell = atlas_cell(letter);
        let (cx, cy) = ((cell % 4) as f32, (cell / 4) as f32);
        for uv in &mut m.uvs[face * 4..face * 4 + 4] {
            *uv = [
                (cx + 0.02 + 0.96 * uv[0]) / 4.0,
                (cy + 0.02 + 0.96 * uv[1]) / 4.0,
            ];
        }
    }
    m
}

/// Product box sizes (width, height, depth); each comes with both label designs.
const PRODUCT_SIZES: [Vec3; 3] = [
    Vec3::new(0.2, 0.28, 0.08),
    Vec3::new(0.28, 0.2, 0.16),
    Vec3::new(0.16, 0.16, 0.16),
];

/// Shipping carton sizes (width, height, depth).
const CARTON_SIZES: [Vec3; 3] = [
    Vec3::new(0.5, 0.4, 0.4),
    Vec3::new(0.6, 0.35, 0.45),
    Vec3::new(0.4, 0.3, 0.32),
];

/// Shelf units: depth, height, board thickness and board top heights.
const SHELF_DEPTH: f32 = 0.42;
const SHELF_HEIGHT: f32 = 2.0;
const BOARD: f32 = 0.025;
const BOARD_TOPS: [f32; 4] = [0.12, 0.57, 1.02, 1.47];

/// Mesh indices of the reusable toys.
struct Prefabs {
    teddy: usize,
    bunny: usize,
    cars: [usize; 2],
    loco: usize,
    wagons: [usize; 2],
    products: Vec<usize>,
    cartons: Vec<usize>,
    beach_ball: usize,
    rubber_ball: usize,
    rings: usize,
    tops: [usize; 2],
    drum: usize,
    robot: usize,
    bricks: [usize; 4],
    blocks: Vec<usize>,
    sign: Vec<usize>,
    shelf_wide: usize,
    shelf_narrow: usize,
}

/// A toy that can be put on a shelf.
#[derive(Clone, Copy, Debug)]
enum Item {
    Product(usize),
    Teddy,
    Bunny,
    BeachBall,
    RubberBall,
    BlockStack,
    Rings,
    Car(usize),
    Loco,
    Robot,
    Drum,
    Top(usize),
    Bricks,
}

/// What each shelf board holds; items are drawn from one theme per board.
const THEMES: [&[Item]; 6] = [
    &[
        Item::Product(0),
        Item::Product(1),
        Item::Product(2),
        Item::Product(3),
        Item::Product(4),
        Item::Product(5),
    ],
    &[Item::Teddy, Item::Bunny, Item::Teddy],
    &[Item::BeachBall, Item::RubberBall, Item::RubberBall],
    &[Item::BlockStack, Item::Rings, Item::Top(0), Item::Top(1)],
    &[Item::Car(0), Item::Car(1), Item::Loco, Item::Robot],
    &[Item::Drum, Item::Bricks, Item::Top(1), Item::Rings],
];

impl Item {
    /// Footprint width along the shelf.
    fn width(self) -> f32 {
        match self {
            Item::Product(k) => PRODUCT_SIZES[k / 2].x,
            Item::Teddy => 0.2,
            Item::Bunny => 0.16,
            Item::BeachBall => 0.22,
            Item::RubberBall => 0.16,
            Item::BlockStack => 0.23,
            Item::Rings => 0.15,
            Item::Car(_) => 0.31,
            Item::Loco => 0.28,
            Item::Robot => 0.17,
            Item::Drum => 0.2,
            Item::Top(_) => 0.13,
            Item::Bricks => 0.15,
        }
    }
}

/// Builds the whole shop as a glTF document.
fn build_shop(seed: u64) -> GltfBuilder {
    let mut shop = Assembly::new(GltfBuilder::new(), derive_seed(seed, hash_str("layout")));
    for m in ALL_MATS {
        shop.b.add_material(m.desc());
    }
    let p = prefabs(&mut shop);
    room(&mut shop);
    shelves(&mut shop, &p);
    counter(&mut shop, &p);
    bunting(&mut shop);
    display_table(&mut shop, &p);
    floor_toys(&mut shop, &p);
    cameras(&mut shop);
    shop.b
}

fn prefabs(shop: &mut Assembly) -> Prefabs {
    let v = Vec3::new;
    let one = Vec3::ONE;

    let teddy = {
        let f = Mat::PlushFur;
        let mut parts = vec![
            ball(f, 0.14, v(0.0, 0.16, 0.0), v(1.0, 1.12, 0.92), 0.0),
            ball(f, 0.11, v(0.0, 0.375, 0.01), v(1.0, 0.95, 0.95), 0.0),
            ball(f, 0.045, v(0.0, 0.355, 0.095), v(1.05, 0.8, 0.9), 0.0),
            ball(
                Mat::RubberBlack,
                0.017,
                v(0.0, 0.372, 0.137),
                v(1.2, 0.8, 0.8),
                0.0,
            ),
            ring(Mat::FabricKnit, 0.1, 0.024, v(0.0, 0.285, 0.0)),
        ];
        for sx in [-1.0, 1.0] {
            parts.extend([
                ball(
                    f,
                    0.042,
                    v(sx * 0.078, 0.465, -0.005),
                    v(1.0, 1.0, 0.55),
                    0.0,
                ),
                ball(
                    Mat::RubberBlack,
                    0.014,
                    v(sx * 0.042, 0.405, 0.088),
                    one,
                    0.0,
                ),
                ball(
                    f,
                    0.05,
                    v(sx * 0.135, 0.2, 0.04),
                    v(0.9, 1.7, 0.9),
                    sx * 0.06,
                ),
                ball(f, 0.06, v(sx * 0.085, 0.055, 0.1), v(0.95, 0.9, 1.6), 0.0),
                ball(
                    Mat::Felt,
                    0.035,
                    v(sx * 0.085, 0.055, 0.19),
                    v(1.0, 1.0, 0.35),
                    0.0,
                ),
            ]);
        }
        shop.mesh("teddy", parts)
    };

    let bunny = {
        let k = Mat::FabricKnit;
        let mut parts = vec![
            ball(k, 0.1, v(0.0, 0.11, 0.0), v(1.0, 1.1, 0.9), 0.0),
            ball(k, 0.075, v(0.0, 0.27, 0.01), one, 0.0),
            ball(Mat::RubberBall, 0.012, v(0.0, 0.265, 0.083), one, 0.0),
            ball(k, 0.035, v(0.0, 0.08, -0.1), one, 0.0),
        ];
        for sx in [-1.0, 1.0] {
            parts.extend([
                ball(
                    k,
                    0.025,
                    v(sx * 0.032, 0.38, 0.0),
                    v(1.0, 3.0, 0.6),
                    -sx * 0.03,
                ),
                ball(Mat::RubberBlack, 0.011, v(sx * 0.03, 0.29, 0.066), one, 0.0),
                ball(k, 0.04, v(sx * 0.05, 0.03, 0.07), v(1.0, 0.7, 1.5), 0.0),
                ball(
                    k,
                    0.03,
                    v(sx * 0.09, 0.14, 0.04),
                    v(0.9, 1.6, 0.9),
                    sx * 0.05,
                ),
            ]);
        }
        shop.mesh("knit_bunny", parts)
    };

    let car = |paint: Mat| {
        let mut parts = vec![
            cuboid(paint, v(0.3, 0.07, 0.14), v(0.0, 0.07, 0.0)),
            cuboid(paint, v(0.15, 0.065, 0.125), v(-0.02, 0.1375, 0.0)),
            cuboid(
                Mat::PlasticBlue,
                v(0.154, 0.045, 0.129),
                v(-0.02, 0.14, 0.0),
            ),
        ];
        for sx in [-1.0, 1.0] {
            parts.push(cuboid(
                Mat::Brushed,
                v(0.012, 0.02, 0.145),
                v(sx * 0.152, 0.06, 0.0),
            ));
            parts.push(rod(
                Mat::PlasticYellow,
                0.012,
                0.006,
                v(0.153, 0.085, sx * 0.045),
                Vec3::X,
            ));
            for sz in [-1.0, 1.0] {
                let c = v(sx * 0.09, 0.035, sz * 0.072);
                parts.push(rod(Mat::RubberBlack, 0.035, 0.025, c, Vec3::Z));
                parts.push(rod(Mat::Brushed, 0.016, 0.028, c, Vec3::Z));
            }
        }
        parts
    };
    let cars = [
        shop.mesh("toy_car_red", car(Mat::PaintRed)),
        shop.mesh("toy_car_blue", car(Mat::PaintBlue)),
    ];

    let loco = {
        let mut parts = vec![
            cuboid(Mat::WoodDark, v(0.44, 0.04, 0.15), v(0.0, 0.06, 0.0)),
            rod(Mat::WoodPainted, 0.065, 0.24, v(0.085, 0.145, 0.0), Vec3::X),
            cuboid(Mat::WoodPainted, v(0.14, 0.17, 0.15), v(-0.14, 0.165, 0.0)),
            cuboid(Mat::RubberBlack, v(0.08, 0.06, 0.152), v(-0.14, 0.2, 0.0)),
            cuboid(Mat::PlasticRed, v(0.17, 0.02, 0.18), v(-0.14, 0.26, 0.0)),
            rod(Mat::PlasticRed, 0.024, 0.08, v(0.16, 0.245, 0.0), Vec3::Y),
            ball(Mat::Brass, 0.03, v(0.06, 0.21, 0.0), one, 0.0),
            cuboid(Mat::PlasticRed, v(0.02, 0.03, 0.17), v(0.23, 0.06, 0.0)),
        ];
        for x in [-0.14, 0.0, 0.13] {
            for sz in [-1.0, 1.0] {
                let c = v(x, 0.04, sz * 0.085);
                parts.push(rod(Mat::PlasticYellow, 0.04, 0.02, c, Vec3::Z));
                parts.push(rod(Mat::Brass, 0.012, 0.024, c, Vec3::Z));
            }
        }
        shop.mesh("locomotive", parts)
    };

    let wagon = |body: Mat| {
        let mut parts = vec![
            cuboid(Mat::WoodDark, v(0.3, 0.035, 0.14), v(0.0, 0.0575, 0.0)),
            cuboid(body, v(0.28, 0.08, 0.13), v(0.0, 0.115, 0.0)),
            cuboid(Mat::Brushed, v(0.05, 0.012, 0.02), v(-0.17, 0.05, 0.0)),
        ];
        for x in [-0.09, 0.09] {
            for sz in [-1.0, 1.0] {
                parts.push(rod(
                    Mat::PlasticRed,
                    0.035,
                    0.02,
                    v(x, 0.035, sz * 0.08),
                    Vec3::Z,
                ));
            }
        }
        parts
    };
    let wagons = [
        shop.mesh("wagon_yellow", wagon(Mat::PlasticYellow)),
        shop.mesh("wagon_blue", wagon(Mat::PlasticBlue)),
    ];

    let mut products = Vec::new();
    for (i, size) in PRODUCT_SIZES.iter().enumerate() {
        for (j, label) in [Mat::LabelStripes, Mat::LabelBlocks]
            .into_iter()
            .enumerate()
        {
            let parts = vec![labelled(label, *size, v(0.0, size.y * 0.5, 0.0))];
            products.push(shop.mesh(&format!("toy_box_{i}_{j}"), parts));
        }
    }

    let mut cartons = Vec::new();
    for (i, size) in CARTON_SIZES.iter().enumerate() {
        let parts = vec![
            cuboid(Mat::Cardboard, *size, v(0.0, size.y * 0.5, 0.0)),
            labelled(
                Mat::LabelStripes,
                v(0.14, 0.09, 0.002),
                v(size.x * 0.2, size.y * 0.62, size.z * 0.5 + 0.001),
            ),
        ];
        cartons.push(shop.mesh(&format!("carton_{i}"), parts));
    }

    let beach_ball = {
        let m = uv_sphere(1.0, 32, 20, UvMode::Unit);
        shop.b.add_mesh("beach_ball", m, Mat::BeachBall.index())
    };
    let rubber_ball = shop.mesh(
        "rubber_ball",
        vec![ball(Mat::RubberBall, 0.08, v(0.0, 0.08, 0.0), one, 0.0)],
    );

    let rings = {
        let mut parts = vec![
            rod(Mat::WoodLight, 0.07, 0.03, v(0.0, 0.015, 0.0), Vec3::Y),
            rod(Mat::WoodLight, 0.012, 0.22, v(0.0, 0.14, 0.0), Vec3::Y),
            ball(Mat::PlasticRed, 0.022, v(0.0, 0.252, 0.0), one, 0.0),
        ];
        let colours = [
            Mat::PlasticRed,
            Mat::PlasticOrange,
            Mat::PlasticYellow,
            Mat::PlasticGreen,
            Mat::PlasticBlue,
        ];
        let mut y = 0.03;
        for (k, m) in colours.into_iter().enumerate() {
            let minor = 0.022 - 0.002 * k as f32;
            let major = 0.055 - 0.007 * k as f32;
            y += minor;
            parts.push(ring(m, major, minor, v(0.0, y, 0.0)));
            y += minor * 0.8;
        }
        shop.mesh("stacking_rings", parts)
    };

    let top = |body: Mat, band: Mat| {
        let down = Mat4::from_rotation_translation(rot(Vec3::X, 0.5), v(0.0, 0.03, 0.0));
        vec![
            (
                cone(0.06, 0.06, 20, body.uv()).transformed(down),
                body.index(),
            ),
            rod(band, 0.064, 0.015, v(0.0, 0.0675, 0.0), Vec3::Y),
            ball(body, 0.06, v(0.0, 0.075, 0.0), v(1.0, 0.45, 1.0), 0.0),
            rod(Mat::Brushed, 0.006, 0.05, v(0.0, 0.115, 0.0), Vec3::Y),
            ball(band, 0.012, v(0.0, 0.14, 0.0), one, 0.0),
        ]
    };
    let tops = [
        shop.mesh("spinning_top_red", top(Mat::PaintRed, Mat::PlasticYellow)),
        shop.mesh("spinning_top_blue", top(Mat::PaintBlue, Mat::PlasticOrange)),
    ];

    let drum = {
        let mut parts = vec![
            rod(Mat::PaintRed, 0.09, 0.09, v(0.0, 0.045, 0.0), Vec3::Y),
            ring(Mat::Brass, 0.09, 0.007, v(0.0, 0.006, 0.0)),
            ring(Mat::Brass, 0.09, 0.007, v(0.0, 0.084, 0.0)),
            rod(Mat::Plaster, 0.088, 0.004, v(0.0, 0.09, 0.0), Vec3::Y),
        ];
        for (sz, turn) in [(-1.0f32, 0.03f32), (1.0, -0.05)] {
            let xf =
                Mat4::from_rotation_translation(rot(Vec3::Y, turn), v(0.02, 0.098, sz * 0.025))
                    * Mat4::from_quat(rot(Vec3::Z, 0.25));
            parts.push((
                cylinder(0.006, 0.2, 10, true, Mat::WoodLight.uv()).transformed(xf),
                Mat::WoodLight.index(),
            ));
        }
        shop.mesh("tin_drum", parts)
    };

    let robot = {
        let mut parts = vec![
            cuboid(Mat::PaintBlue, v(0.12, 0.12, 0.08), v(0.0, 0.14, 0.0)),
            cuboid(Mat::Brushed, v(0.07, 0.05, 0.005), v(0.0, 0.15, 0.0425)),
            rod(
                Mat::PlasticGreen,
                0.007,
                0.006,
                v(0.0, 0.165, 0.046),
                Vec3::Z,
            ),
            rod(Mat::Brushed, 0.015, 0.02, v(0.0, 0.21, 0.0), Vec3::Y),
            cuboid(Mat::Brushed, v(0.08, 0.07, 0.07), v(0.0, 0.245, 0.0)),
            cuboid(
                Mat::RubberBlack,
                v(0.04, 0.008, 0.004),
                v(0.0, 0.225, 0.036),
            ),
            rod(Mat::Brushed, 0.003, 0.03, v(0.0, 0.295, 0.0), Vec3::Y),
            ball(Mat::PlasticRed, 0.01, v(0.0, 0.315, 0.0), one, 0.0),
        ];
        for sx in [-1.0, 1.0] {
            parts.extend([
                cuboid(Mat::PaintBlue, v(0.04, 0.08, 0.05), v(sx * 0.03, 0.04, 0.0)),
                rod(
                    Mat::PlasticRed,
                    0.007,
                    0.006,
                    v(sx * 0.022, 0.135, 0.046),
                    Vec3::Z,
                ),
                rod(
                    Mat::PlasticYellow,
                    0.012,
                    0.008,
                    v(sx * 0.018, 0.255, 0.036),
                    Vec3::Z,
                ),
                rod(Mat::Brushed, 0.014, 0.1, v(sx * 0.075, 0.15, 0.0), Vec3::Y),
                ball(Mat::PaintBlue, 0.018, v(sx * 0.075, 0.095, 0.0), one, 0.0),
            ]);
        }
        shop.mesh("tin_robot", parts)
    };

    let brick = |m: Mat| {
        let mut parts = vec![cuboid(m, v(0.064, 0.0384, 0.032), v(0.0, 0.0192, 0.0))];
        for x in [-0.024, -0.008, 0.008, 0.024] {
            for z in [-0.008, 0.008] {
                parts.push(rod(m, 0.0048, 0.0034, v(x, 0.0401, z), Vec3::Y));
            }
        }
        parts
    };
    let bricks = [
        shop.mesh("brick_red", brick(Mat::PlasticRed)),
        shop.mesh("brick_yellow", brick(Mat::PlasticYellow)),
        shop.mesh("brick_blue", brick(Mat::PlasticBlue)),
        shop.mesh("brick_green", brick(Mat::PlasticGreen)),
    ];

    let pick = |shop: &Assembly, a: i32, b: i32| {
        ATLAS_LETTERS[(shop.hash(a, b) % ATLAS_LETTERS.len() as u32) as usize]
    };
    let mut blocks = Vec::new();
    for k in 0..6 {
        let letters = std::array::from_fn(|f| pick(shop, k, f as i32));
        blocks.push(shop.b.add_mesh(
            &format!("letter_block_{k}"),
            letter_block(letters),
            Mat::LetterBlocks.index(),
        ));
    }
    let mut sign = Vec::new();
    for (k, &front) in b"TOYS".iter().enumerate() {
        let mut letters: [u8; 6] = std::array::from_fn(|f| pick(shop, 100 + k as i32, f as i32));
        letters[4] = front;
        sign.push(shop.b.add_mesh(
            &format!("sign_block_{}", char::from(front)),
            letter_block(letters),
            Mat::LetterBlocks.index(),
        ));
    }

    let shelf_unit = |width: f32| {
        let (d, h, t) = (SHELF_DEPTH, SHELF_HEIGHT, BOARD);
        let mut parts = vec![
            cuboid(Mat::WoodDark, v(width, t, d), v(0.0, h - t * 0.5, 0.0)),
            cuboid(
                Mat::WoodLight,
                v(width - 2.0 * t, h - t, 0.012),
                v(0.0, (h - t) * 0.5, -d * 0.5 + 0.006),
            ),
            cuboid(
                Mat::WoodDark,
                v(width - 2.0 * t, 0.095, 0.02),
                v(0.0, 0.0475, d * 0.5 - 0.01),
            ),
        ];
        for sx in [-1.0, 1.0] {
            parts.push(cuboid(
                Mat::WoodDark,
                v(t, h, d),
                v(sx * (width - t) * 0.5, h * 0.5, 0.0),
            ));
        }
        for top in BOARD_TOPS {
            parts.push(cuboid(
                Mat::WoodLight,
                v(width - 2.0 * t, t, d - 0.012),
                v(0.0, top - t * 0.5, 0.006),
            ));
        }
        parts
    };
    let shelf_wide = shop.mesh("shelf_unit_2.4m", shelf_unit(2.4));
    let shelf_narrow = shop.mesh("shelf_unit_2.2m", shelf_unit(2.2));

    Prefabs {
        teddy,
        bunny,
        cars,
        loco,
        wagons,
        products,
        cartons,
        beach_ball,
        rubber_ball,
        rings,
        tops,
        drum,
        robot,
        bricks,
        blocks,
        sign,
        shelf_wide,
        shelf_narrow,
    }
}

/// Places a toy with its bottom centre at `pos`; returns the node.
fn place(shop: &mut Assembly, p: &Prefabs, item: Item, pos: Vec3, yaw: f32, key: i32) -> usize {
    match item {
        Item::Product(k) => shop.put("toy_box", p.products[k], pos, yaw, 1.0),
        Item::Teddy => shop.put("teddy", p.teddy, pos, yaw, 0.55),
        Item::Bunny => shop.put("bunny", p.bunny, pos, yaw, 0.75),
        Item::BeachBall => shop.put("beach_ball", p.beach_ball, pos + Vec3::Y * 0.11, yaw, 0.11),
        Item::RubberBall => shop.put("rubber_ball", p.rubber_ball, pos, yaw, 1.0),
        Item::Rings => shop.put("stacking_rings", p.rings, pos, yaw, 1.0),
        Item::Car(k) => shop.put("toy_car", p.cars[k], pos, yaw, 1.0),
        Item::Loco => shop.put("locomotive", p.loco, pos, yaw, 0.62),
        Item::Robot => shop.put("robot", p.robot, pos, yaw, 1.0),
        Item::Drum => shop.put("drum", p.drum, pos, yaw, 1.0),
        Item::Top(k) => shop.put("spinning_top", p.tops[k], pos, yaw, 1.0),
        Item::BlockStack => block_stack(shop, p, pos, yaw, 0.07, key),
        Item::Bricks => {
            let pick = |shop: &Assembly, i: i32| {
                p.bricks[(shop.hash(key, i) % p.bricks.len() as u32) as usize]
            };
            // Two bricks side by side and one across them: (offset, yaw).
            let layout = [
                (Vec3::new(-0.034, 0.0, 0.0), 0.0),
                (Vec3::new(0.034, 0.0, 0.01), 0.01),
                (Vec3::new(0.0, 0.0384, 0.0), 0.23),
            ];
            let mut bricks = Vec::new();
            for (i, (at, turn)) in (0..).zip(layout) {
                let prefab = pick(shop, i);
                bricks.push(shop.put("brick", prefab, at, turn, 1.0));
            }
            shop.group("bricks", pos, yaw, bricks)
        }
    }
}

/// A 3-2-1 pyramid of letter blocks of edge `s`.
fn block_stack(shop: &mut Assembly, p: &Prefabs, pos: Vec3, yaw: f32, s: f32, key: i32) -> usize {
    let mut children = Vec::new();
    let mut i = 0;
    for (row, count) in [3, 2, 1].into_iter().enumerate() {
        for k in 0..count {
            let x = (k as f32 - (count - 1) as f32 * 0.5) * s * 1.04;
            let mesh = p.blocks[(shop.hash(key, i) % p.blocks.len() as u32) as usize];
            let turn =
                (shop.hash(key, i + 50) % 4) as f32 * 0.25 + (shop.rand(key, i + 99) - 0.5) * 0.04;
            let c = Vec3::new(x, (row as f32 + 0.5) * s, 0.0);
            children.push(shop.put("letter_block", mesh, c, turn, s));
            i += 1;
        }
    }
    shop.group("block_stack", pos, yaw, children)
}

fn room(shop: &mut Assembly) {
    let v = Vec3::new;
    shop.fixed(
        "floor",
        vec![cuboid(
            Mat::FloorPlanks,
            v(8.4, 0.1, 6.4),
            v(0.0, -0.05, 0.0),
        )],
    );
    shop.fixed(
        "wall_back",
        vec![cuboid(Mat::Brick, v(8.4, 3.0, 0.2), v(0.0, 1.5, -3.1))],
    );
    // Front wall with a door opening between x = −3.2 and −2.0.
    shop.fixed(
        "wall_front",
        vec![
            cuboid(Mat::Brick, v(1.0, 3.0, 0.2), v(-3.7, 1.5, 3.1)),
            cuboid(Mat::Brick, v(6.2, 3.0, 0.2), v(1.1, 1.5, 3.1)),
            cuboid(Mat::Brick, v(1.2, 0.7, 0.2), v(-2.6, 2.65, 3.1)),
            cuboid(Mat::WoodDark, v(1.2, 0.06, 0.24), v(-2.6, 2.27, 3.1)),
        ],
    );
    shop.fixed(
        "wall_left",
        vec![
            cuboid(Mat::Plaster, v(0.2, 3.0, 6.0), v(-4.1, 1.5, 0.0)),
            cuboid(Mat::WoodDark, v(0.02, 0.12, 6.0), v(-3.99, 0.06, 0.0)),
        ],
    );
    shop.fixed(
        "wall_right",
        vec![
            cuboid(Mat::Plaster, v(0.2, 3.0, 6.0), v(4.1, 1.5, 0.0)),
            cuboid(Mat::Tiles, v(0.02, 1.2, 6.0), v(3.99, 0.6, 0.0)),
            cuboid(Mat::WoodDark, v(0.04, 0.05, 6.0), v(3.98, 1.225, 0.0)),
        ],
    );
    // A paper poster on the back wall above the carton stack: a plane turned to face +z
    // (its v then runs down the wall, so the print is upright).
    let poster = Mat4::from_rotation_translation(rot(Vec3::X, 0.25), v(2.45, 1.85, -2.997));
    shop.fixed(
        "poster",
        vec![(
            plane(0.75, 0.95, UvMode::Unit).transformed(poster),
            Mat::LabelBlocks.index(),
        )],
    );
}

fn shelves(shop: &mut Assembly, p: &Prefabs) {
    // (position, yaw, wide?) — two units on the back wall, two on the left wall.
    let units = [
        (Vec3::new(-2.35, 0.0, -3.0 + SHELF_DEPTH * 0.5), 0.0, true),
        (Vec3::new(0.1, 0.0, -3.0 + SHELF_DEPTH * 0.5), 0.0, true),
        (Vec3::new(-4.0 + SHELF_DEPTH * 0.5, 0.0, -1.4), 0.25, false),
        (Vec3::new(-4.0 + SHELF_DEPTH * 0.5, 0.0, 0.9), 0.25, false),
    ];
    for (u, &(pos, yaw, wide)) in units.iter().enumerate() {
        let width = if wide { 2.4 } else { 2.2 };
        let mesh = if wide { p.shelf_wide } else { p.shelf_narrow };
        let mut children = vec![shop.put("shelf_unit", mesh, Vec3::ZERO, 0.0, 1.0)];
        for (b, &top) in BOARD_TOPS.iter().enumerate() {
            let key = (u * 8 + b) as i32;
            let theme = THEMES[(u * 5 + b * 2 + (shop.hash(key, 0) % 2) as usize) % THEMES.len()];
            let end = width * 0.5 - BOARD - 0.03;
            let mut x = -end;
            for i in 0..32 {
                let item = theme[(shop.hash(key, i + 1) % theme.len() as u32) as usize];
                let w = item.width();
                if x + w > end {
                    break;
                }
                let z = 0.01 + (shop.rand(key, i + 200) - 0.5) * 0.04;
                let yaw = match item {
                    // Balls are round: spin them freely to show different gores.
                    Item::BeachBall | Item::RubberBall => shop.rand(key, i + 300),
                    _ => (shop.rand(key, i + 300) - 0.5) * 0.04,
                };
                let pos = Vec3::new(x + w * 0.5, top, z);
                children.push(place(shop, p, item, pos, yaw, key * 64 + i));
                x += w + 0.03 + shop.rand(key, i + 400) * 0.05;
            }
        }
        if u == 0 {
            // The "TOYS" sign on top of the first back unit.
            for (k, &mesh) in p.sign.iter().enumerate() {
                let x = (k as f32 - 1.5) * 0.36;
                let yaw = (shop.rand(500, k as i32) - 0.5) * 0.06;
                let c = Vec3::new(x, SHELF_HEIGHT + 0.15, 0.0);
                children.push(shop.put("sign_block", mesh, c, yaw, 0.3));
            }
        }
        shop.group(&format!("shelf_{u}"), pos, yaw, children);
    }
}

fn counter(shop: &mut Assembly, p: &Prefabs) {
    let v = Vec3::new;
    // The counter runs along z at x ≈ 2.45, facing the shop (−x).
    let (cx, cz, len) = (2.45, -0.5, 2.2);
    shop.fixed(
        "counter",
        vec![
            cuboid(Mat::WoodDark, v(0.6, 0.95, len), v(cx, 0.475, cz)),
            cuboid(Mat::Tiles, v(0.02, 0.8, len - 0.1), v(cx - 0.31, 0.5, cz)),
            cuboid(Mat::WoodDark, v(0.7, 0.05, len + 0.1), v(cx, 0.975, cz)),
            cuboid(
                Mat::Brushed,
                v(0.012, 0.05, len + 0.1),
                v(cx - 0.356, 0.975, cz),
            ),
            cuboid(
                Mat::Tiles,
                v(0.56, 0.8, 0.02),
                v(cx, 0.5, cz + len * 0.5 + 0.01),
            ),
            cuboid(
                Mat::Felt,
                v(0.4, 0.006, 0.5),
                v(cx - 0.05, 1.003, cz + 0.55),
            ),
        ],
    );
    // Staff side: drawers over cupboard doors, with brass knobs.
    let mut back = Vec::new();
    for k in -1..=1 {
        let z = cz + k as f32 * 0.72;
        back.extend([
            cuboid(Mat::WoodLight, v(0.02, 0.2, 0.66), v(cx + 0.31, 0.8, z)),
            cuboid(Mat::WoodLight, v(0.02, 0.56, 0.66), v(cx + 0.31, 0.38, z)),
            ball(Mat::Brass, 0.016, v(cx + 0.33, 0.8, z), Vec3::ONE, 0.0),
            ball(
                Mat::Brass,
                0.016,
                v(cx + 0.33, 0.58, z + 0.25),
                Vec3::ONE,
                0.0,
            ),
        ]);
    }
    shop.fixed("counter_back", back);
    // Till: brushed base, red body, key pad and display.
    let mut till = vec![
        cuboid(Mat::Brushed, v(0.36, 0.08, 0.32), v(0.0, 0.04, 0.0)),
        cuboid(Mat::PaintRed, v(0.3, 0.12, 0.26), v(0.02, 0.14, 0.0)),
        cuboid(Mat::Brushed, v(0.05, 0.1, 0.2), v(0.12, 0.25, 0.0)),
        cuboid(Mat::RubberBlack, v(0.005, 0.06, 0.16), v(0.0925, 0.26, 0.0)),
    ];
    for i in 0..4 {
        for j in 0..3 {
            let m = if (i + j) % 3 == 0 {
                Mat::PlasticYellow
            } else {
                Mat::Brushed
            };
            till.push(cuboid(
                m,
                v(0.035, 0.015, 0.035),
                v(-0.09 + j as f32 * 0.045, 0.205, -0.07 + i as f32 * 0.045),
            ));
        }
    }
    let till = shop.mesh("till", till);
    shop.put("till", till, v(cx + 0.05, 1.0, cz - 0.6), -0.25, 1.0);
    let bell = shop.mesh(
        "bell",
        vec![
            rod(Mat::WoodDark, 0.05, 0.015, v(0.0, 0.0075, 0.0), Vec3::Y),
            ball(Mat::Brass, 0.04, v(0.0, 0.03, 0.0), v(1.0, 0.8, 1.0), 0.0),
            ball(Mat::Brushed, 0.008, v(0.0, 0.065, 0.0), Vec3::ONE, 0.0),
        ],
    );
    shop.put("bell", bell, v(cx - 0.2, 1.0, cz - 0.1), 0.0, 1.0);
    // Toys on the felt mat.
    place(
        shop,
        p,
        Item::Top(0),
        v(cx - 0.12, 1.006, cz + 0.4),
        0.0,
        900,
    );
    place(
        shop,
        p,
        Item::Top(1),
        v(cx + 0.02, 1.006, cz + 0.52),
        0.1,
        901,
    );
    place(
        shop,
        p,
        Item::Bricks,
        v(cx - 0.1, 1.006, cz + 0.68),
        0.3,
        902,
    );
    // A tray of rubber balls at the end of the counter.
    let tray = shop.mesh(
        "ball_tray",
        vec![
            cuboid(Mat::Cardboard, v(0.36, 0.01, 0.36), v(0.0, 0.005, 0.0)),
            cuboid(Mat::Cardboard, v(0.36, 0.08, 0.01), v(0.0, 0.04, 0.175)),
            cuboid(Mat::Cardboard, v(0.36, 0.08, 0.01), v(0.0, 0.04, -0.175)),
            cuboid(Mat::Cardboard, v(0.01, 0.08, 0.34), v(0.175, 0.04, 0.0)),
            cuboid(Mat::Cardboard, v(0.01, 0.08, 0.34), v(-0.175, 0.04, 0.0)),
        ],
    );
    let mut balls = vec![shop.put("tray", tray, Vec3::ZERO, 0.0, 1.0)];
    for (i, (x, z)) in [(-0.07, -0.07), (0.07, -0.07), (-0.07, 0.07), (0.07, 0.07)]
        .into_iter()
        .enumerate()
    {
        let spin = shop.rand(950, i as i32);
        balls.push(shop.put("rubber_ball", p.rubber_ball, v(x, 0.01, z), spin, 0.6));
    }
    balls.push(shop.put("rubber_ball", p.rubber_ball, v(0.0, 0.085, 0.0), 0.3, 0.6));
    shop.group("ball_tray", v(cx, 1.0, cz + 1.0), 0.05, balls);

    // A wall shelf with toy boxes behind the counter.
    let wall_shelf = shop.mesh(
        "wall_shelf",
        vec![
            cuboid(Mat::WoodLight, v(0.3, 0.03, 2.4), v(0.0, -0.015, 0.0)),
            cuboid(Mat::Brushed, v(0.25, 0.03, 0.02), v(0.0, -0.045, -0.9)),
            cuboid(Mat::Brushed, v(0.25, 0.03, 0.02), v(0.0, -0.045, 0.9)),
        ],
    );
    let mut items = vec![shop.put("wall_shelf", wall_shelf, Vec3::ZERO, 0.0, 1.0)];
    let mut z = -1.1;
    for i in 0..12 {
        let item = Item::Product((shop.hash(960, i) % 6) as usize);
        let w = item.width();
        if z + w > 1.1 {
            break;
        }
        // Boxes face the room (−x): local +z of the item becomes −x.
        let pos = v(0.0, 0.0, z + w * 0.5);
        items.push(place(shop, p, item, pos, -0.25, 960 + i));
        z += w + 0.04;
    }
    shop.group("wall_shelf", v(3.85, 1.55, cz), 0.0, items);
}

fn display_table(shop: &mut Assembly, p: &Prefabs) {
    let v = Vec3::new;
    let (cx, cz) = (-0.5, -1.55);
    let mut parts = vec![
        cuboid(Mat::WoodDark, v(1.4, 0.04, 0.7), v(0.0, 0.72, 0.0)),
        cuboid(Mat::Felt, v(1.36, 0.01, 0.66), v(0.0, 0.745, 0.0)),
    ];
    for (sx, sz) in [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
        parts.push(cuboid(
            Mat::WoodDark,
            v(0.05, 0.7, 0.05),
            v(sx * 0.63, 0.35, sz * 0.28),
        ));
    }
    let mesh = shop.mesh("display_table", parts);
    let top = 0.75;
    let mut children = vec![shop.put("display_table", mesh, Vec3::ZERO, 0.0, 1.0)];
    let layout = [
        (Item::Robot, v(-0.5, top, 0.05), 0.05),
        (Item::Drum, v(-0.2, top, -0.12), 0.0),
        (Item::Rings, v(0.05, top, 0.1), 0.0),
        (Item::Car(1), v(0.35, top, -0.12), 0.08),
        (Item::Top(0), v(0.55, top, 0.15), 0.0),
        (Item::BlockStack, v(-0.2, top, 0.18), 0.02),
    ];
    for (i, (item, pos, yaw)) in layout.into_iter().enumerate() {
        children.push(place(shop, p, item, pos, yaw, 1000 + i as i32));
    }
    shop.group("display_table", v(cx, 0.0, cz), 0.0, children);
}

fn floor_toys(shop: &mut Assembly, p: &Prefabs) {
    let v = Vec3::new;
    let rug_top = 0.012;
    shop.fixed(
        "rug",
        vec![cuboid(
            Mat::FabricPlaid,
            v(3.4, rug_top, 2.4),
            v(-0.5, rug_top * 0.5, 0.6),
        )],
    );
    shop.put("teddy_big", p.teddy, v(-1.55, rug_top, 0.15), 0.17, 1.3);
    shop.put("bunny_big", p.bunny, v(-1.95, rug_top, 0.55), 0.2, 1.4);
    block_stack(shop, p, v(-0.5, rug_top, 0.0), 0.08, 0.12, 2000);
    for (i, (x, z, yaw)) in [(-0.15, 0.35, 0.1), (-0.75, 0.45, 0.37), (0.05, 0.05, 0.6)]
        .into_iter()
        .enumerate()
    {
        let mesh = p.blocks[(shop.hash(2100, i as i32) % 6) as usize];
        shop.put("letter_block", mesh, v(x, rug_top + 0.06, z), yaw, 0.12);
    }
    for (i, (x, z, yaw)) in [(0.3, 0.55, 0.1), (0.45, 0.4, 0.35), (0.2, 0.75, 0.8)]
        .into_iter()
        .enumerate()
    {
        let mesh = p.bricks[i % p.bricks.len()];
        shop.put("brick_big", mesh, v(x, rug_top, z), yaw, 2.0);
    }
    shop.put(
        "beach_ball",
        p.beach_ball,
        v(0.75, 0.25 + rug_top, -0.05),
        0.1,
        0.25,
    );
    shop.put("beach_ball", p.beach_ball, v(3.3, 0.2, 1.6), 0.6, 0.2);
    shop.put(
        "rubber_ball",
        p.rubber_ball,
        v(0.55, rug_top, 1.45),
        0.0,
        1.0,
    );
    shop.put("rubber_ball", p.rubber_ball, v(1.6, 0.0, 0.3), 0.0, 1.0);
    shop.put("pedal_car", p.cars[0], v(1.05, 0.0, -0.75), 0.35, 2.0);

    // A straight wooden track with a train on the rug.
    let track_len = 2.0;
    let mut track = Vec::new();
    for sz in [-1.0, 1.0] {
        track.push(cuboid(
            Mat::Brushed,
            v(track_len, 0.012, 0.01),
            v(0.0, 0.018, sz * 0.085),
        ));
    }
    let sleepers = 20;
    for i in 0..sleepers {
        let x = (i as f32 + 0.5) / sleepers as f32 * track_len - track_len * 0.5;
        track.push(cuboid(
            Mat::WoodLight,
            v(0.04, 0.012, 0.24),
            v(x, 0.006, 0.0),
        ));
    }
    let track = shop.mesh("track", track);
    let on_rails = 0.024;
    let mut train = vec![
        shop.put("track", track, Vec3::ZERO, 0.0, 1.0),
        shop.put("locomotive", p.loco, v(0.55, on_rails, 0.0), 0.0, 1.0),
        shop.put("wagon", p.wagons[0], v(0.18, on_rails, 0.0), 0.0, 1.0),
        shop.put("wagon", p.wagons[1], v(-0.18, on_rails, 0.0), 0.0, 1.0),
    ];
    for (i, x) in [0.12, 0.24, -0.24].into_iter().enumerate() {
        let mesh = p.blocks[(shop.hash(2200, i as i32) % 6) as usize];
        let c = v(x - 0.03, on_rails + 0.155 + 0.03, 0.0);
        train.push(shop.put("cargo_block", mesh, c, 0.05 * i as f32, 0.06));
    }
    shop.group("train", v(-0.6, rug_top, 1.35), -0.02, train);

    // Cartons: a stack in the back-right corner and a few by the door.
    let cartons = [
        (0, v(3.55, 0.0, -2.65), 0.0),
        (1, v(2.95, 0.0, -2.7), 0.02),
        (2, v(3.5, 0.4, -2.62), -0.04),
        (2, v(3.55, 0.0, -2.05), 0.25),
        (1, v(-3.55, 0.0, 2.55), 0.0),
        (0, v(-3.6, 0.35, 2.55), 0.03),
    ];
    for (k, pos, yaw) in cartons {
        shop.put("carton", p.cartons[k], pos, yaw, 1.0);
    }
}

/// Pennant garlands along the upper walls: a sagging cord with small felt and plastic
/// flags.
fn bunting(shop: &mut Assembly) {
    const FLAGS: [Mat; 5] = [
        Mat::PlasticRed,
        Mat::PlasticYellow,
        Mat::PlasticBlue,
        Mat::PlasticGreen,
        Mat::PlasticOrange,
    ];
    // A flat triangular pennant pointing down, 0.16 m wide and 0.2 m long.
    let pennant = |m: Mat, at: Vec3, yaw: f32| -> Part {
        let xf = Mat4::from_rotation_translation(rot(Vec3::Y, yaw), at)
            * Mat4::from_scale(Vec3::new(1.0, 1.0, 0.06))
            * Mat4::from_quat(rot(Vec3::X, 0.5));
        (
            cone(0.09, 0.2, 3, m.uv()).transformed(xf * Mat4::from_quat(rot(Vec3::Y, 0.5))),
            m.index(),
        )
    };
    // (start, end, yaw of the flags)
    let runs = [
        (Vec3::new(-3.8, 2.75, -2.9), Vec3::new(3.8, 2.75, -2.9), 0.0),
        (
            Vec3::new(-3.9, 2.75, -2.8),
            Vec3::new(-3.9, 2.75, 2.8),
            0.25,
        ),
        (Vec3::new(-3.9, 2.85, -0.3), Vec3::new(3.9, 2.85, -0.3), 0.0),
    ];
    for (r, (a, b, yaw)) in runs.into_iter().enumerate() {
        let len = (b - a).length();
        let flags = (len / 0.3) as usize;
        let sag = 0.05 * len;
        let point = |t: f32| a + (b - a) * t - Vec3::Y * (sag * 4.0 * t * (1.0 - t));
        let mut parts = Vec::new();
        let cord_segments = 24;
        for k in 0..cord_segments {
            let (p0, p1) = (
                point(k as f32 / cord_segments as f32),
                point((k + 1) as f32 / cord_segments as f32),
            );
            let d = p1 - p0;
            let q = Quat::from_rotation_arc(Vec3::Y, d.normalize());
            let xf = Mat4::from_rotation_translation(q, (p0 + p1) * 0.5);
            parts.push((
                cylinder(0.004, d.length(), 6, false, Mat::Brushed.uv()).transformed(xf),
                Mat::Brushed.index(),
            ));
        }
        for k in 0..flags {
            let t = (k as f32 + 0.5) / flags as f32;
            let m = FLAGS[(k + r) % FLAGS.len()];
            parts.push(pennant(m, point(t) - Vec3::Y * 0.1, yaw));
        }
        shop.fixed(&format!("bunting_{r}"), parts);
    }
}

fn cameras(shop: &mut Assembly) {
    let add = |shop: &mut Assembly, name: &str, eye: Vec3, target: Vec3, yfov_deg: f32| {
        let rotation = look_rotation(target - eye, Vec3::Y);
        shop.b
            .add_camera(name, eye, rotation, yfov_deg.to_radians(), 0.05);
    };
    add(
        shop,
        "overview",
        Vec3::new(3.55, 1.65, 2.8),
        Vec3::new(-1.3, 0.8, -1.5),
        55.0,
    );
    add(
        shop,
        "shelf",
        Vec3::new(-1.95, 1.3, -0.55),
        Vec3::new(-2.35, 0.95, -2.8),
        50.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder for the test `tag`.
    fn temp_dir(tag: &str) -> PathBuf {
        crate::io::test_dir(&format!("toyshop-{tag}"))
    }

    /// Every file under `dir`, relative path → bytes, sorted.
    fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("readable output dir") {
                let path = entry.expect("dir entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(dir).expect("under dir").to_path_buf();
                    out.push((rel, std::fs::read(&path).expect("readable output file")));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn toyshop_generates_valid_deterministic_scene() {
        let opts = ToyshopOptions {
            texture_size: 16,
            seed: 7,
        };
        let dir_a = temp_dir("a");
        let gltf = generate(&dir_a, &opts).expect("generation succeeds");
        assert_eq!(gltf, dir_a.join("toyshop.gltf"));

        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&gltf).expect("gltf written")).expect("json");
        let materials = doc["materials"].as_array().expect("materials array");
        assert!(materials.len() >= 24, "only {} materials", materials.len());
        let cameras: Vec<&str> = doc["nodes"]
            .as_array()
            .expect("nodes array")
            .iter()
            .filter(|n| n.get("camera").is_some())
            .filter_map(|n| n["name"].as_str())
            .collect();
        assert_eq!(cameras, ["overview", "shelf"]);

        // Every referenced file exists, and the images are the requested size.
        let uris = doc["buffers"]
            .as_array()
            .into_iter()
            .chain(doc["images"].as_array())
            .flatten()
            .map(|x| x["uri"].as_str().expect("uri string"));
        let mut count = 0;
        for uri in uris {
            let path = dir_a.join(uri);
            assert!(path.is_file(), "missing {}", path.display());
            if uri.ends_with(".png") {
                let img = image::open(&path).expect("decodable png");
                assert_eq!((img.width(), img.height()), (16, 16));
            }
            count += 1;
        }
        assert_eq!(count, 1 + 3 * ALL_MATS.len());

        // The whole document is valid glTF with consistent accessors.
        let (document, buffers, images) = gltf::import(&gltf).expect("gltf crate imports it");
        assert_eq!(buffers.len(), 1);
        assert_eq!(images.len(), 3 * ALL_MATS.len());
        assert_eq!(document.materials().len(), ALL_MATS.len());

        // Same options, same bytes; no temporary files left behind.
        let dir_b = temp_dir("b");
        generate(&dir_b, &opts).expect("second generation succeeds");
        let (a, b) = (snapshot(&dir_a), snapshot(&dir_b));
        assert!(a.iter().all(|(p, _)| !p.to_string_lossy().contains(".tmp")));
        assert_eq!(a.len(), b.len());
        for ((pa, da), (pb, db)) in a.iter().zip(&b) {
            assert_eq!(pa, pb);
            assert!(da == db, "{} differs between runs", pa.display());
        }

        // A different seed changes the output.
        let dir_c = temp_dir("c");
        generate(&dir_c, &ToyshopOptions { seed: 8, ..opts }).expect("third generation");
        assert_ne!(snapshot(&dir_c), a);

        for d in [dir_a, dir_b, dir_c] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn toyshop_rejects_bad_texture_size() {
        let dir = temp_dir("bad").join("scene");
        for size in [0, 2, 3, 100, 8192] {
            let opts = ToyshopOptions {
                texture_size: size,
                seed: 1,
            };
            let err = generate(&dir, &opts).expect_err("invalid size must fail");
            assert!(matches!(err, ToyshopError::TextureSize(s) if s == size));
            assert!(err.to_string().contains("texture_size"), "{err}");
        }
        assert!(!dir.exists(), "nothing is written for invalid options");
    }

    #[test]
    fn toyshop_reports_unwritable_folder() {
        let dir = temp_dir("file");
        let blocker = dir.join("not_a_dir");
        std::fs::write(&blocker, b"x").expect("blocker file");
        let err = generate(&blocker, &ToyshopOptions::default()).expect_err("must fail");
        assert!(err.to_string().contains("not_a_dir"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn toyshop_materials_are_distinct() {
        let names: Vec<&str> = ALL_MATS.iter().map(|m| m.spec().name).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(n), "duplicate material {n}");
        }
        for (i, m) in ALL_MATS.iter().enumerate() {
            assert_eq!(m.index(), i, "ALL_MATS must follow the enum order");
        }
    }
}
