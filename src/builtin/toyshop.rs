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
    if !(4..=4096).contains(&size) || !size.is_power_of_two() {
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
// Materials
// ---------------------------------------------------------------------------------------

/// The shop's materials, in glTF order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mat {
    FloorPlanks,
    WoodLight,
    WoodDark,
    WoodPainted,
    LetterBlocks,
    Brick,
    Plaster,
    Tiles,
    FabricPlaid,
    FabricKnit,
    Felt,
    PlushFur,
    Cardboard,
    LabelStripes,
    LabelBlocks,
    PaintRed,
    PaintBlue,
    Brushed,
    Brass,
    PlasticRed,
    PlasticYellow,
    PlasticBlue,
    PlasticGreen,
    PlasticOrange,
    RubberBlack,
    RubberBall,
    BeachBall,
}

const ALL_MATS: [Mat; 27] = [
    Mat::FloorPlanks,
    Mat::WoodLight,
    Mat::WoodDark,
    Mat::WoodPainted,
    Mat::LetterBlocks,
    Mat::Brick,
    Mat::Plaster,
    Mat::Tiles,
    Mat::FabricPlaid,
    Mat::FabricKnit,
    Mat::Felt,
    Mat::PlushFur,
    Mat::Cardboard,
    Mat::LabelStripes,
    Mat::LabelBlocks,
    Mat::PaintRed,
    Mat::PaintBlue,
    Mat::Brushed,
    Mat::Brass,
    Mat::PlasticRed,
    Mat::PlasticYellow,
    Mat::PlasticBlue,
    Mat::PlasticGreen,
    Mat::PlasticOrange,
    Mat::RubberBlack,
    Mat::RubberBall,
    Mat::BeachBall,
];

/// Static description of a material.
struct Spec {
    /// File and material name.
    name: &'static str,
    /// Metres covered by one texture repeat (drives UV density and normal strength).
    tile: f32,
    /// Extra normal-map exaggeration on top of the physical heights.
    bump: f32,
}

impl Mat {
    fn index(self) -> usize {
        self as usize
    }

    fn spec(self) -> Spec {
        let (name, tile, bump) = match self {
            Mat::FloorPlanks => ("floor_planks", 2.0, 1.5),
            Mat::WoodLight => ("wood_maple", 0.6, 1.5),
            Mat::WoodDark => ("wood_walnut", 0.8, 1.5),
            Mat::WoodPainted => ("wood_painted_green", 0.5, 1.5),
            Mat::LetterBlocks => ("letter_blocks", 0.3, 1.5),
            Mat::Brick => ("brick", 0.9, 1.2),
            Mat::Plaster => ("plaster", 2.0, 1.0),
            Mat::Tiles => ("ceramic_tiles", 0.6, 1.2),
            Mat::FabricPlaid => ("fabric_plaid", 0.5, 1.2),
            Mat::FabricKnit => ("fabric_knit", 0.3, 1.5),
            Mat::Felt => ("felt_green", 0.3, 1.5),
            Mat::PlushFur => ("plush_fur", 0.2, 1.2),
            Mat::Cardboard => ("cardboard", 1.0, 1.5),
            Mat::LabelStripes => ("paper_label_stripes", 0.3, 1.0),
            Mat::LabelBlocks => ("paper_label_blocks", 0.3, 1.0),
            Mat::PaintRed => ("metal_painted_red", 0.5, 1.0),
            Mat::PaintBlue => ("metal_painted_blue", 0.5, 1.0),
            Mat::Brushed => ("metal_brushed", 0.5, 1.0),
            Mat::Brass => ("metal_brass", 0.4, 1.0),
            Mat::PlasticRed => ("plastic_red", 0.3, 1.0),
            Mat::PlasticYellow => ("plastic_yellow", 0.3, 1.0),
            Mat::PlasticBlue => ("plastic_blue", 0.3, 1.0),
            Mat::PlasticGreen => ("plastic_green", 0.3, 1.0),
            Mat::PlasticOrange => ("plastic_orange", 0.3, 1.0),
            Mat::RubberBlack => ("rubber_black", 0.1, 1.0),
            Mat::RubberBall => ("rubber_pink", 0.25, 1.0),
            Mat::BeachBall => ("beach_ball_vinyl", 1.0, 1.0),
        };
        Spec { name, tile, bump }
    }

    /// UV layout that shows this material's texture at its real-world density.
    fn uv(self) -> UvMode {
        UvMode::PerMetre(1.0 / self.spec().tile)
    }

    /// The glTF material referencing this material's texture set.
    fn desc(self) -> MaterialDesc {
        let name = self.spec().name;
        let tex = |kind: &str| Some(format!("{TEXTURE_DIR}/{name}_{kind}.png"));
        MaterialDesc {
            base_color_texture: tex("basecolor"),
            normal_texture: tex("normal"),
            metallic_roughness_texture: tex("orm"),
            occlusion_texture: tex("orm"),
            ..MaterialDesc::new(name)
        }
    }
}

/// One texel of a material before encoding.
#[derive(Clone, Copy, Debug)]
struct Texel {
    /// Linear base colour.
    albedo: [f32; 3],
    /// Height in metres (only differences matter).
    height: f32,
    /// Perceptual roughness.
    rough: f32,
    /// Metalness.
    metal: f32,
    /// Ambient occlusion.
    ao: f32,
}

impl Texel {
    fn dielectric(albedo: [f32; 3], height: f32, rough: f32, ao: f32) -> Self {
        Self {
            albedo,
            height,
            rough,
            metal: 0.0,
            ao,
        }
    }
}

/// Per-material painting context.
struct Ctx {
    /// Material seed.
    seed: u32,
}

impl Ctx {
    /// A sub-seed for one feature of the material.
    fn s(&self, k: u32) -> u32 {
        hash_u32(self.seed ^ k.wrapping_mul(0x9e37_79b9))
    }
}

/// Paints every material's texture set into `tex_dir`, spreading materials over threads.
fn paint_all(tex_dir: &Path, size: u32, seed: u64) -> Result<(), ToyshopError> {
    let encoder = SrgbEncoder::new();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(ALL_MATS.len());
    let mut results: Vec<(usize, Result<(), ToyshopError>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&mat) = ALL_MATS.get(i) else { break };
                        done.push((i, paint_material(mat, tex_dir, size, seed, &encoder)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().try_for_each(|(_, r)| r)
}

/// Paints one material and writes its three PNGs.
fn paint_material(
    mat: Mat,
    tex_dir: &Path,
    size: u32,
    seed: u64,
    encoder: &SrgbEncoder,
) -> Result<(), ToyshopError> {
    let spec = mat.spec();
    let ctx = Ctx {
        seed: derive_seed(seed, hash_str(spec.name)),
    };
    let n = size as usize;
    let mut base = Vec::with_capacity(n * n * 3);
    let mut orm = Vec::with_capacity(n * n * 3);
    let mut heights = Vec::with_capacity(n * n);
    let inv = 1.0 / size as f32;
    for y in 0..n {
        let v = (y as f32 + 0.5) * inv;
        for x in 0..n {
            let u = (x as f32 + 0.5) * inv;
            let t = texel(mat, u, v, &ctx);
            base.extend(t.albedo.map(|c| encoder.encode(c)));
            orm.extend([unorm8(t.ao), unorm8(t.rough), unorm8(t.metal)]);
            heights.push(t.height);
        }
    }
    let normals = normal_map_from_height(&heights, n, n, spec.bump / spec.tile);
    let normal_bytes: Vec<u8> = normals.into_iter().flatten().collect();
    for (kind, bytes) in [
        ("basecolor", &base),
        ("normal", &normal_bytes),
        ("orm", &orm),
    ] {
        write_png(
            &tex_dir.join(format!("{}_{kind}.png", spec.name)),
            bytes,
            size,
        )?;
    }
    Ok(())
}

/// Encodes an RGB8 image as PNG and writes it atomically.
fn write_png(path: &Path, rgb: &[u8], size: u32) -> Result<(), ToyshopError> {
    let mut bytes = Vec::new();
    PngEncoder::new(&mut bytes)
        .write_image(rgb, size, size, ExtendedColorType::Rgb8)
        .map_err(|source| ToyshopError::Encode {
            path: path.to_owned(),
            source,
        })?;
    write_atomic(path, &bytes).map_err(|source| ToyshopError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Dispatches to the material's painter. `(u, v)` is in `[0, 1)²`.
fn texel(mat: Mat, u: f32, v: f32, c: &Ctx) -> Texel {
    match mat {
        Mat::FloorPlanks => planks(u, v, c),
        Mat::WoodLight => wood(u, v, c, 0xD9B47E, 0xB5844F, 0.55),
        Mat::WoodDark => wood(u, v, c, 0x6E4528, 0x3E2414, 0.35),
        Mat::WoodPainted => painted_wood(u, v, c, 0x2F7D4E),
        Mat::LetterBlocks => letter_blocks(u, v, c),
        Mat::Brick => brick(u, v, c),
        Mat::Plaster => plaster(u, v, c),
        Mat::Tiles => tiles(u, v, c),
        Mat::FabricPlaid => plaid(u, v, c),
        Mat::FabricKnit => knit(u, v, c),
        Mat::Felt => felt(u, v, c),
        Mat::PlushFur => fur(u, v, c),
        Mat::Cardboard => cardboard(u, v, c),
        Mat::LabelStripes => label_stripes(u, v, c),
        Mat::LabelBlocks => label_blocks(u, v, c),
        Mat::PaintRed => painted_metal(u, v, c, 0xB8231C),
        Mat::PaintBlue => painted_metal(u, v, c, 0x2152A3),
        Mat::Brushed => brushed(u, v, c, 0xC4C5C8, 0xA9ABAF, 0.25),
        Mat::Brass => brushed(u, v, c, 0xE3C27A, 0xA88246, 0.3),
        Mat::PlasticRed => plastic(u, v, c, 0xD0231F),
        Mat::PlasticYellow => plastic(u, v, c, 0xF4C21A),
        Mat::PlasticBlue => plastic(u, v, c, 0x1E63D0),
        Mat::PlasticGreen => plastic(u, v, c, 0x2FA043),
        Mat::PlasticOrange => plastic(u, v, c, 0xF47B1C),
        Mat::RubberBlack => rubber_tread(u, v, c),
        Mat::RubberBall => rubber_ball(u, v, c),
        Mat::BeachBall => beach_ball(u, v, c),
    }
}

/// Distance in `[0, 0.5]` from a fractional coordinate to the nearest cell edge.
fn edge(f: f32) -> f32 {
    f.min(1.0 - f)
}

/// Splits `x · n` into its integer cell (wrapped to `n`) and the fraction inside it.
fn cell(x: f32, n: u32) -> (u32, f32) {
    let y = x * n as f32;
    let f = y.floor();
    ((f as i64).rem_euclid(i64::from(n)) as u32, y - f)
}

/// True when `p` lies in the axis-aligned rectangle `[x0, y0, x1, y1]`.
fn in_rect(u: f32, v: f32, r: [f32; 4]) -> bool {
    u >= r[0] && u < r[2] && v >= r[1] && v < r[3]
}

/// Wood grain value in `[0, 1]` (1 = dark latewood) with fibres along u and
/// `rings` growth rings across one repeat of v.
fn grain(u: f32, v: f32, seed: u32, rings: u32) -> f32 {
    // Low-frequency warp bends the rings and varies their spacing; the wobble adds
    // small kinks.
    let warp = fbm(u, v, [1, 1], 3, 0.5, seed);
    let wobble = fbm(u, v, [3, 6], 2, 0.5, hash_u32(seed ^ 1));
    let r = v * rings as f32 + warp * 3.5 + wobble * 0.3;
    let ring = r - r.floor();
    let late = smoothstep(0.5, 0.85, ring) * smoothstep(1.0, 0.92, ring);
    let fibres = fbm(u, v, [4, 160], 2, 0.6, hash_u32(seed ^ 2)) * 0.5 + 0.5;
    (0.65 * late + 0.35 * fibres).clamp(0.0, 1.0)
}

fn wood(u: f32, v: f32, c: &Ctx, light: u32, dark: u32, rough: f32) -> Texel {
    let g = grain(u, v, c.s(1), 22);
    let tone = fbm(u, v, [2, 2], 3, 0.5, c.s(2)) * 0.5 + 0.5;
    let albedo = scale3(
        lerp3(srgb_hex(light), srgb_hex(dark), g * 0.85),
        0.9 + 0.2 * tone,
    );
    let pores = value_noise(u, v, [24, 256], c.s(3));
    Texel::dielectric(
        albedo,
        -0.0005 * g - 0.00012 * pores,
        rough + 0.12 * g,
        1.0 - 0.1 * g,
    )
}

fn painted_wood(u: f32, v: f32, c: &Ctx, paint: u32) -> Texel {
    let g = grain(u, v, c.s(1), 12);
    let brush = fbm(u, v, [4, 64], 2, 0.5, c.s(2));
    let wear = smoothstep(0.45, 0.6, fbm(u, v, [3, 3], 4, 0.55, c.s(3)));
    let paint_col = scale3(srgb_hex(paint), 0.95 + 0.06 * brush - 0.06 * g);
    let albedo = lerp3(paint_col, srgb_hex(0xC9A06A), wear * 0.8);
    Texel::dielectric(
        albedo,
        -0.00012 * g + 0.00003 * brush - 0.0001 * wear,
        lerp(0.38 + 0.06 * brush, 0.65, wear),
        1.0,
    )
}

fn planks(u: f32, v: f32, c: &Ctx) -> Texel {
    const ROWS: u32 = 12; // 2 m / 12 ≈ 0.167 m wide boards
    const PER_ROW: u32 = 2; // 1 m long boards
    let (row, lv) = cell(v, ROWS);
    let offset = unit_f32(hash2(row as i32, 0, c.s(1)));
    let (board, lu) = cell(u + offset / PER_ROW as f32, PER_ROW);
    let id = hash2(row as i32, board as i32, c.s(2));
    let tone = unit_f32(id);
    let g = grain(u + offset, v + unit_f32(hash_u32(id)), c.s(3), 72);
    let light = lerp3(srgb_hex(0xCFA673), srgb_hex(0xA97B4A), tone);
    let dark = lerp3(srgb_hex(0x93633A), srgb_hex(0x6B4325), tone);
    let wear = fbm(u, v, [3, 3], 4, 0.5, c.s(4)) * 0.5 + 0.5;
    let e = (edge(lv) * 2.0 / ROWS as f32).min(edge(lu) * 2.0 / PER_ROW as f32);
    let board_mask = smoothstep(0.0015, 0.0045, e);
    let bevel = smoothstep(0.0015, 0.012, e);
    let albedo = scale3(
        lerp3(light, dark, g * 0.8),
        (0.9 + 0.15 * wear) * lerp(0.3, 1.0, board_mask),
    );
    let cup = (lv - 0.5) * (lv - 0.5) * 0.0012 * unit_f32(hash_u32(id ^ 7));
    Texel::dielectric(
        albedo,
        -0.0025 * (1.0 - bevel) - 0.00015 * g + cup,
        lerp(0.9, 0.32 + 0.15 * g + 0.15 * wear, board_mask),
        lerp(0.35, 1.0, board_mask),
    )
}

fn brick(u: f32, v: f32, c: &Ctx) -> Texel {
    const ROWS: u32 = 12; // 75 mm courses on a 0.9 m tile
    const COLS: u32 = 4; // 225 mm bricks
    let (row, lv) = cell(v, ROWS);
    let shift = if row % 2 == 1 { 0.5 / COLS as f32 } else { 0.0 };
    let (col, lu) = cell(u + shift, COLS);
    let id = hash2(col as i32, row as i32, c.s(1));
    let ragged = 0.0015 * fbm(u, v, [24, 24], 2, 0.5, c.s(2));
    let e = (edge(lu) * 0.9 / COLS as f32).min(edge(lv) * 0.9 / ROWS as f32) + ragged;
    let inside = smoothstep(0.005, 0.0075, e);
    let round = smoothstep(0.005, 0.014, e);
    const REDS: [u32; 6] = [0x9A3F2C, 0xA9483A, 0x8A3325, 0xB25A40, 0x7A2E24, 0x9E4A34];
    let base = srgb_hex(REDS[(id >> 29) as usize % REDS.len()]);
    let burnt = smoothstep(0.7, 1.0, unit_f32(hash_u32(id)));
    let speck = value_noise(u, v, [180, 180], c.s(3));
    let blotch = fbm(u, v, [12, 12], 3, 0.5, c.s(4));
    let brick_col = scale3(
        lerp3(base, srgb_hex(0x4A2A22), burnt * 0.5),
        0.85 + 0.2 * speck + 0.15 * blotch,
    );
    let pits = 1.0 - smoothstep(0.0, 0.18, cellular(u, v, [40, 40], 0.9, c.s(5)).f1);
    let pit_mask = smoothstep(
        0.6,
        0.8,
        unit_f32(hash2((u * 40.0) as i32, (v * 40.0) as i32, c.s(6))),
    );
    let mortar_col = scale3(srgb_hex(0xB3ACA0), 0.85 + 0.25 * speck);
    let brick_h = 0.004 * round + 0.0006 * blotch - 0.0008 * pits * pit_mask;
    let mortar_h = 0.0004 * speck;
    Texel::dielectric(
        lerp3(mortar_col, brick_col, inside),
        lerp(mortar_h, brick_h, inside),
        lerp(0.95, 0.78 + 0.1 * speck, inside),
        lerp(0.55, 1.0 - 0.3 * pits * pit_mask, inside),
    )
}

fn plaster(u: f32, v: f32, c: &Ctx) -> Texel {
    let trowel = fbm(u, v, [8, 8], 5, 0.55, c.s(1));
    let fine = value_noise(u, v, [220, 220], c.s(2));
    let mottle = fbm(u, v, [3, 3], 3, 0.5, c.s(3));
    let albedo = scale3(srgb_hex(0xEEE1C6), 0.94 + 0.05 * mottle + 0.03 * fine);
    Texel::dielectric(
        albedo,
        0.003 * trowel + 0.0002 * fine,
        0.82 + 0.08 * fine,
        1.0,
    )
}

fn tiles(u: f32, v: f32, c: &Ctx) -> Texel {
    const N: u32 = 4; // 150 mm tiles on a 0.6 m repeat
    let (ti, lu) = cell(u, N);
    let (tj, lv) = cell(v, N);
    let id = hash2(ti as i32, tj as i32, c.s(1));
    let e = edge(lu).min(edge(lv)) * 0.6 / N as f32;
    let inside = smoothstep(0.0018, 0.0032, e);
    let bevel = smoothstep(0.0018, 0.009, e);
    let checker = (ti + tj) % 2 == 0;
    let base = if checker {
        srgb_hex(0xEDE7D9)
    } else {
        srgb_hex(0x5F9E9B)
    };
    let tone = 0.94 + 0.08 * unit_f32(id);
    let glaze = fbm(u, v, [8, 8], 3, 0.5, c.s(2));
    let crackle = cellular(u, v, [24, 24], 0.9, c.s(3));
    let craze = 1.0 - smoothstep(0.0, 0.04, crackle.f2 - crackle.f1);
    let tile_col = scale3(base, tone + 0.03 * glaze - 0.04 * craze);
    let grout = scale3(
        srgb_hex(0x8F8A80),
        0.9 + 0.2 * value_noise(u, v, [150, 150], c.s(4)),
    );
    Texel::dielectric(
        lerp3(grout, tile_col, inside),
        0.0025 * bevel + 0.0002 * glaze - 0.0012,
        lerp(0.9, 0.08 + 0.05 * (glaze * 0.5 + 0.5) + 0.1 * craze, inside),
        lerp(0.6, 1.0, inside),
    )
}

/// The tartan sett: (threads, colour) bands over half a repeat, mirrored.
const SETT: [(u32, u32); 8] = [
    (10, 0x9E1C1F),
    (2, 0x151515),
    (4, 0x9E1C1F),
    (8, 0x1E4D2B),
    (2, 0xE3BC45),
    (8, 0x1E4D2B),
    (6, 0x1C2A4C),
    (8, 0x9E1C1F),
];

fn sett_colour(thread: u32) -> [f32; 3] {
    let half: u32 = SETT.iter().map(|s| s.0).sum();
    let t = thread % (2 * half);
    let mut k = if t < half { t } else { 2 * half - 1 - t };
    for &(w, col) in &SETT {
        if k < w {
            return srgb_hex(col);
        }
        k -= w;
    }
    srgb_hex(SETT[0].1)
}

fn plaid(u: f32, v: f32, c: &Ctx) -> Texel {
    const THREADS: u32 = 96; // 2 × 48-thread sett
    let (ix, fx) = cell(u, THREADS);
    let (iy, fy) = cell(v, THREADS);
    let warp_on_top = (ix + iy) % 4 < 2; // 2/2 twill
    let (col, across, along, id) = if warp_on_top {
        (sett_colour(ix), fx, fy, ix)
    } else {
        (sett_colour(iy), fy, fx, iy + 1000)
    };
    let (a, b) = (2.0 * across - 1.0, 2.0 * along - 1.0);
    let profile = (1.0 - a * a).max(0.0).sqrt();
    let float = 1.0 - 0.35 * b * b;
    let fuzz = fbm(u, v, [48, 48], 2, 0.5, c.s(1));
    let jitter = unit_f32(hash2(id as i32, 0, c.s(2)));
    let albedo = scale3(
        col,
        (0.72 + 0.28 * profile) * (0.92 + 0.12 * jitter) * (1.0 + 0.1 * fuzz),
    );
    Texel::dielectric(
        albedo,
        0.0012 * profile * float + 0.0002 * fuzz,
        0.92 + 0.05 * fuzz,
        0.6 + 0.4 * profile,
    )
}

fn knit(u: f32, v: f32, c: &Ctx) -> Texel {
    const COLS: u32 = 20;
    const ROWS: u32 = 28;
    let (ci, cx) = cell(u, COLS);
    let (ri, cy) = cell(v, ROWS);
    // One V-shaped stitch spans 1.3 rows; sample this row's stitch and the tail of the
    // stitch above, keep the higher one.
    let leg = |t: f32| -> (f32, f32) {
        let ax = (cx - 0.5).abs();
        let centre = 0.44 - 0.34 * (t / 1.3);
        let d = (ax - centre) / 0.21;
        let taper = smoothstep(-0.05, 0.15, t) * smoothstep(1.3, 1.05, t);
        let bulge = (1.0 - d * d).max(0.0).sqrt() * taper;
        let (twist, _) = sin_cos_turns(t * 3.0 + ax * 7.0);
        (bulge, twist)
    };
    let (a, twist_a) = leg(cy);
    let (b, twist_b) = leg(cy + 1.0);
    let (bulge, twist, row) = if a >= b {
        (a, twist_a, ri)
    } else {
        (b, twist_b, (ri + ROWS - 1) % ROWS)
    };
    let stripe = (row / 5) % 3;
    let base = match stripe {
        0 => srgb_hex(0xE8DCC0),
        1 => srgb_hex(0x2F7C84),
        _ => srgb_hex(0xD9663A),
    };
    let heather = fbm(u, v, [40, 40], 2, 0.5, c.s(1));
    let stitch_tone = unit_f32(hash2(ci as i32, row as i32, c.s(2)));
    let albedo = scale3(
        base,
        (0.55 + 0.45 * bulge) * (0.93 + 0.1 * stitch_tone + 0.08 * heather + 0.05 * twist),
    );
    Texel::dielectric(
        albedo,
        0.0025 * bulge + 0.0002 * twist * bulge,
        0.95,
        0.45 + 0.55 * bulge,
    )
}

fn felt(u: f32, v: f32, c: &Ctx) -> Texel {
    let matted = fbm(u, v, [20, 20], 4, 0.6, c.s(1));
    let fine = value_noise(u, v, [160, 160], c.s(2));
    let fib = cellular(u, v, [48, 48], 1.0, c.s(3));
    let fibre = 1.0 - smoothstep(0.0, 0.05, fib.f2 - fib.f1);
    let albedo = scale3(
        srgb_hex(0x3D7A3C),
        0.88 + 0.12 * matted + 0.06 * fine + 0.12 * fibre,
    );
    Texel::dielectric(
        albedo,
        0.0005 * matted + 0.0002 * fine + 0.0001 * fibre,
        0.97,
        0.9 + 0.1 * matted,
    )
}

fn fur(u: f32, v: f32, c: &Ctx) -> Texel {
    let clump: Cellular = cellular(u, v, [24, 24], 0.9, c.s(1));
    let tuft = (1.0 - clump.f1 / 0.8).clamp(0.0, 1.0);
    let tuft = tuft * tuft;
    let strands = fbm(u, v, [12, 128], 2, 0.6, c.s(2)) * 0.5 + 0.5;
    let tone = unit_f32(clump.id);
    let root = srgb_hex(0x5A3A1F);
    let tip = lerp3(srgb_hex(0xA8753F), srgb_hex(0xC28E55), tone);
    let albedo = lerp3(root, tip, (0.35 + 0.45 * tuft + 0.3 * strands).min(1.0));
    Texel::dielectric(
        albedo,
        0.003 * tuft + 0.0008 * strands,
        0.88,
        0.5 + 0.5 * tuft,
    )
}

fn cardboard(u: f32, v: f32, c: &Ctx) -> Texel {
    let tone = fbm(u, v, [3, 3], 4, 0.5, c.s(1));
    let fleck = value_noise(u, v, [300, 300], c.s(2));
    let fleck2 = value_noise(u, v, [90, 90], c.s(3));
    let (flute, _) = sin_cos_turns(v * 125.0);
    let dent = fbm(u, v, [5, 5], 4, 0.55, c.s(4));
    let mut albedo = scale3(
        lerp3(srgb_hex(0xBE955F), srgb_hex(0xA27A48), tone * 0.5 + 0.5),
        0.93 + 0.1 * fleck + 0.05 * fleck2,
    );
    // A printed "this side up" mark: a frame with two arrows.
    let ink = {
        let frame = [0.08, 0.1, 0.34, 0.3];
        let inside = in_rect(u, v, frame);
        let border = inside && !in_rect(u, v, [0.095, 0.115, 0.325, 0.285]);
        let arrow = |x0: f32| {
            let shaft = in_rect(u, v, [x0 - 0.012, 0.17, x0 + 0.012, 0.26]);
            let head = (0.13..0.18).contains(&v) && (u - x0).abs() < (v - 0.13) * 0.9;
            shaft || head
        };
        border || arrow(0.16) || arrow(0.26)
    };
    let stain = smoothstep(0.55, 0.7, fbm(u, v, [4, 4], 4, 0.5, c.s(5)));
    albedo = scale3(albedo, 1.0 - 0.25 * stain);
    if ink {
        albedo = lerp3(albedo, srgb_hex(0x2E241C), 0.85);
    }
    Texel::dielectric(
        albedo,
        0.0003 * flute + 0.002 * dent + 0.0001 * fleck,
        if ink { 0.7 } else { 0.9 },
        0.95 + 0.05 * flute,
    )
}

/// Paper with fibres: (albedo, height).
fn paper(u: f32, v: f32, c: &Ctx) -> ([f32; 3], f32) {
    let fibre = fbm(u, v, [32, 32], 3, 0.6, c.s(1));
    (
        scale3(srgb_hex(0xF2EDE1), 0.96 + 0.04 * fibre),
        0.00008 * fibre,
    )
}

/// Rows of "words": true where a text line has ink. `r` is the text block rectangle.
fn text_lines(u: f32, v: f32, r: [f32; 4], lines: u32, seed: u32) -> bool {
    if !in_rect(u, v, r) {
        return false;
    }
    let lv = (v - r[1]) / (r[3] - r[1]) * lines as f32;
    let line = lv.floor() as u32;
    if lv - lv.floor() > 0.55 {
        return false;
    }
    let lu = (u - r[0]) / (r[2] - r[0]);
    // The last line is shorter.
    let len = if line + 1 == lines {
        0.45 + 0.3 * unit_f32(hash2(line as i32, 9, seed))
    } else {
        0.92
    };
    if lu > len {
        return false;
    }
    // Word gaps.
    let chars = lu * 28.0;
    let ch = chars.floor() as i32;
    unit_f32(hash2(ch, line as i32, seed)) > 0.16 && chars - chars.floor() < 0.8
}

/// A barcode in rectangle `r`.
fn barcode(u: f32, v: f32, r: [f32; 4], seed: u32) -> Option<bool> {
    if !in_rect(u, v, r) {
        return None;
    }
    let x = ((u - r[0]) / (r[2] - r[0]) * 48.0).floor() as i32;
    Some(!hash2(x, 0, seed).is_multiple_of(3))
}

fn ink_texel(albedo: [f32; 3], paper_h: f32, ink: bool) -> Texel {
    Texel::dielectric(
        albedo,
        paper_h + if ink { 0.00004 } else { 0.0 },
        if ink { 0.42 } else { 0.78 },
        1.0,
    )
}

fn label_stripes(u: f32, v: f32, c: &Ctx) -> Texel {
    let (paper_col, paper_h) = paper(u, v, c);
    let red = srgb_hex(0xD23A2E);
    let yellow = srgb_hex(0xF4C430);
    let blue = srgb_hex(0x2456A6);
    let white = srgb_hex(0xF7F4EC);
    let dark = srgb_hex(0x2A2A2E);
    let (col, ink) = if v < 0.26 {
        let s = (u + v) * 7.0;
        let stripe = s - s.floor() < 0.5;
        (if stripe { red } else { yellow }, true)
    } else if in_rect(u, v, [0.07, 0.32, 0.93, 0.54]) {
        // Title panel with chunky white "letters".
        let lu = (u - 0.07) / 0.86 * 9.0;
        let lv = (v - 0.32) / 0.22;
        let glyph = lu.floor() as i32;
        let fx = lu - lu.floor();
        let on = (0.15..0.85).contains(&fx) && (0.2..0.8).contains(&lv) && {
            let bits = hash2(glyph, 1, c.s(2));
            let gx = ((fx - 0.15) / 0.7 * 3.0) as u32;
            let gy = ((lv - 0.2) / 0.6 * 3.0) as u32;
            bits >> (gy * 3 + gx) & 1 == 1 || gx == 0
        };
        (if on { white } else { blue }, true)
    } else if text_lines(u, v, [0.07, 0.6, 0.9, 0.8], 5, c.s(3)) {
        (dark, true)
    } else if let Some(bar) = barcode(u, v, [0.6, 0.84, 0.92, 0.95], c.s(4)) {
        (if bar { dark } else { white }, bar)
    } else if ((u - 0.2) * (u - 0.2) + (v - 0.88) * (v - 0.88)).sqrt() < 0.07 {
        (red, true)
    } else {
        (paper_col, false)
    };
    ink_texel(col, paper_h, ink)
}

fn label_blocks(u: f32, v: f32, c: &Ctx) -> Texel {
    let (paper_col, paper_h) = paper(u, v, c);
    let black = srgb_hex(0x1E1E22);
    let red = srgb_hex(0xC8302A);
    let yellow = srgb_hex(0xF2C230);
    let blue = srgb_hex(0x244E9E);
    let white = srgb_hex(0xF7F4EC);
    let line = |x: f32, at: f32| (x - at).abs() < 0.012;
    let is_line = line(u, 0.32)
        || line(v, 0.25)
        || line(v, 0.6)
        || (v > 0.6 && line(u, 0.75))
        || (u > 0.75 && line(v, 0.82));
    let (col, ink) = if is_line {
        (black, true)
    } else if v < 0.25 {
        if u < 0.32 {
            (red, true)
        } else if text_lines(u, v, [0.38, 0.06, 0.95, 0.2], 3, c.s(2)) {
            (black, true)
        } else {
            (paper_col, false)
        }
    } else if v < 0.6 {
        if u < 0.32 {
            (yellow, true)
        } else {
            // Blue panel with a white ring logo and a star-like dot.
            let d = ((u - 0.63) * (u - 0.63) + (v - 0.425) * (v - 0.425)).sqrt();
            let ring = (0.08..0.12).contains(&d) || d < 0.04;
            (if ring { white } else { blue }, true)
        }
    } else if u < 0.75 {
        if text_lines(u, v, [0.05, 0.65, 0.7, 0.85], 4, c.s(3)) {
            (black, true)
        } else if let Some(bar) = barcode(u, v, [0.06, 0.88, 0.36, 0.97], c.s(4)) {
            (if bar { black } else { white }, bar)
        } else {
            (paper_col, false)
        }
    } else if v < 0.82 {
        (red, true)
    } else {
        (yellow, true)
    };
    ink_texel(col, paper_h, ink)
}

fn painted_metal(u: f32, v: f32, c: &Ctx, paint: u32) -> Texel {
    let peel = fbm(u, v, [28, 28], 3, 0.5, c.s(1));
    let tone = fbm(u, v, [3, 3], 3, 0.5, c.s(2));
    let chips_n = fbm(u, v, [5, 5], 5, 0.6, c.s(3));
    let chip = smoothstep(0.5, 0.54, chips_n);
    let scratch =
        scratches(u, v, 14, 0.35, 0.02, c.s(4)).max(scratches(u, v, 31, 0.2, 0.03, c.s(5)));
    let dents = fbm(u, v, [3, 3], 3, 0.5, c.s(6));
    let bare = chip.max(scratch * 0.8);
    let paint_col = scale3(srgb_hex(paint), 0.96 + 0.06 * tone);
    let steel = scale3(srgb_hex(0x6E6F72), 0.9 + 0.1 * peel);
    Texel {
        albedo: lerp3(paint_col, steel, bare),
        height: 0.0001 * peel + 0.0004 * dents - 0.00025 * bare,
        rough: lerp(0.26 + 0.06 * tone, 0.45, bare),
        metal: bare,
        ao: 1.0 - 0.15 * chip,
    }
}

fn brushed(u: f32, v: f32, c: &Ctx, light: u32, dark: u32, rough: f32) -> Texel {
    let streak = fbm(u, v, [2, 200], 3, 0.65, c.s(1)) * 0.5 + 0.5;
    let smudge = fbm(u, v, [4, 4], 4, 0.5, c.s(2)) * 0.5 + 0.5;
    let tarnish = smoothstep(0.55, 0.8, smudge);
    Texel {
        albedo: lerp3(
            srgb_hex(light),
            srgb_hex(dark),
            0.35 * streak + 0.25 * tarnish,
        ),
        height: 0.00002 * streak,
        rough: rough + 0.12 * streak + 0.12 * tarnish,
        metal: 1.0,
        ao: 1.0,
    }
}

fn plastic(u: f32, v: f32, c: &Ctx, colour: u32) -> Texel {
    let swirl = fbm(u, v, [3, 3], 3, 0.5, c.s(1));
    let grainy = value_noise(u, v, [128, 128], c.s(2));
    let scuff = scratches(u, v, 12, 0.3, 0.02, c.s(3));
    Texel::dielectric(
        scale3(srgb_hex(colour), 0.97 + 0.04 * swirl - 0.05 * scuff),
        0.00003 * grainy - 0.00003 * scuff,
        0.28 + 0.05 * grainy + 0.25 * scuff,
        1.0,
    )
}

fn rubber_tread(u: f32, v: f32, c: &Ctx) -> Texel {
    let (_, fu) = cell(u, 16);
    let groove = 1.0 - smoothstep(0.1, 0.16, edge(fu));
    let rib = 1.0 - smoothstep(0.02, 0.04, (v * 4.0 - (v * 4.0).round()).abs() * 0.25);
    let grime = fbm(u, v, [8, 8], 3, 0.5, c.s(1));
    let cut = groove.max(rib * 0.6);
    Texel::dielectric(
        scale3(srgb_hex(0x202022), 0.9 + 0.12 * grime),
        -0.0012 * cut + 0.00005 * grime,
        0.82 + 0.08 * grime,
        1.0 - 0.4 * cut,
    )
}

fn rubber_ball(u: f32, v: f32, c: &Ctx) -> Texel {
    let pore = cellular(u, v, [64, 64], 0.9, c.s(1));
    let pit =
        (1.0 - smoothstep(0.0, 0.15, pore.f1)) * f32::from(u8::from(pore.id.is_multiple_of(3)));
    let mottle = fbm(u, v, [6, 6], 3, 0.5, c.s(2));
    Texel::dielectric(
        scale3(srgb_hex(0xE0485C), 0.93 + 0.07 * mottle),
        -0.00008 * pit + 0.00004 * mottle,
        0.55 + 0.08 * mottle + 0.1 * pit,
        1.0 - 0.2 * pit,
    )
}

fn beach_ball(u: f32, v: f32, c: &Ctx) -> Texel {
    const GORES: [u32; 6] = [0xE23B2E, 0xF3F0E8, 0x2C63C9, 0xF5C518, 0xF3F0E8, 0x2E9E4F];
    let (gore, fu) = cell(u, GORES.len() as u32);
    let cap = !(0.07..=0.93).contains(&v);
    let cap_seam = 1.0 - smoothstep(0.0, 0.004, (v - 0.07).abs().min((v - 0.93).abs()));
    let gore_seam = if cap {
        0.0
    } else {
        1.0 - smoothstep(0.0, 0.02, edge(fu))
    };
    let seam = cap_seam.max(gore_seam);
    let wrinkle = fbm(u, v, [6, 6], 3, 0.5, c.s(1));
    let base = if cap {
        srgb_hex(0xF3F0E8)
    } else {
        srgb_hex(GORES[gore as usize])
    };
    Texel::dielectric(
        scale3(base, (0.97 + 0.03 * wrinkle) * (1.0 - 0.35 * seam)),
        -0.0006 * seam + 0.0002 * wrinkle,
        0.3 + 0.05 * wrinkle + 0.2 * seam,
        1.0 - 0.3 * seam,
    )
}

/// Letters on the letter-block atlas, row-major over its 4 × 4 cells.
const ATLAS_LETTERS: [u8; 16] = *b"ABCDEFGHKMNOPSTY";

/// 5 × 7 bitmap of an atlas letter; bit 4 is the leftmost column.
fn glyph(letter: u8) -> [u8; 7] {
    match letter {
        b'A' => [14, 17, 17, 31, 17, 17, 17],
        b'B' => [30, 17, 17, 30, 17, 17, 30],
        b'C' => [14, 17, 16, 16, 16, 17, 14],
        b'D' => [30, 17, 17, 17, 17, 17, 30],
        b'E' => [31, 16, 16, 30, 16, 16, 31],
        b'F' => [31, 16, 16, 30, 16, 16, 16],
        b'G' => [14, 17, 16, 23, 17, 17, 15],
        b'H' => [17, 17, 17, 31, 17, 17, 17],
        b'K' => [17, 18, 20, 24, 20, 18, 17],
        b'M' => [17, 27, 21, 21, 17, 17, 17],
        b'N' => [17, 17, 25, 21, 19, 17, 17],
        b'O' => [14, 17, 17, 17, 17, 17, 14],
        b'P' => [30, 17, 17, 30, 16, 16, 16],
        b'S' => [15, 16, 16, 14, 1, 1, 30],
        b'T' => [31, 4, 4, 4, 4, 4, 4],
        b'Y' => [17, 17, 10, 4, 4, 4, 4],
        _ => [0; 7],
    }
}

/// Cell of `letter` in the letter-block atlas.
fn atlas_cell(letter: u8) -> usize {
    ATLAS_LETTERS
        .iter()
        .position(|&l| l == letter)
        .expect("letter-block letters come from ATLAS_LETTERS")
}

fn letter_blocks(u: f32, v: f32, c: &Ctx) -> Texel {
    const PAINTS: [u32; 6] = [0xC62D25, 0x2459B5, 0x2E8C3A, 0xE8A417, 0x7B3FA0, 0xE0601E];
    let (cx, lu) = cell(u, 4);
    let (cy, lv) = cell(v, 4);
    let idx = (cy * 4 + cx) as usize;
    let paint = scale3(srgb_hex(PAINTS[idx % PAINTS.len()]), 0.97);
    let g = grain(u, v, c.s(1), 10);
    let wood_col = lerp3(srgb_hex(0xE2C08C), srgb_hex(0xC09058), g * 0.8);
    let e = edge(lu).min(edge(lv));
    let outer = smoothstep(0.0, 0.03, e);
    let frame = e < 0.085 && e > 0.03;
    let rows = glyph(ATLAS_LETTERS[idx]);
    let gx = (lu - 0.2) / 0.12;
    let gy = (lv - 0.15) / 0.1;
    let letter = (0.0..5.0).contains(&gx)
        && (0.0..7.0).contains(&gy)
        && rows[gy as usize] >> (4 - gx as u32) & 1 == 1;
    let painted = frame || letter;
    let albedo = scale3(
        if painted { paint } else { wood_col },
        lerp(0.75, 1.0, outer),
    );
    Texel::dielectric(
        albedo,
        if painted { 0.0005 } else { 0.0 } - 0.0001 * g - 0.0008 * (1.0 - outer),
        if painted { 0.35 } else { 0.6 + 0.1 * g },
        lerp(0.7, 1.0, outer),
    )
}

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

    /// A fresh, unique folder under the system temp dir.
    fn temp_dir(tag: &str) -> PathBuf {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("neurotex-toyshop-{tag}-{}-{n}", std::process::id()));
        // A stale folder from an earlier run with the same pid would only add files.
        let _ = std::fs::remove_dir_all(&dir);
        dir
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
        let dir = temp_dir("bad");
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
        std::fs::create_dir_all(&dir).expect("temp dir");
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
