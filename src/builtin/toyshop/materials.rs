//! The toy shop's materials and their textures: [`Mat`], one texture set per material,
//! and the painters that draw each set texel by texel from integer hashes of the seed
//! (wood, brick, fabrics, labels, metals, plastics, the letter-block atlas).

use super::*;

/// The shop's materials, in glTF order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mat {
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

pub(super) const ALL_MATS: [Mat; 27] = [
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
pub(super) struct Spec {
    /// File and material name.
    pub(super) name: &'static str,
    /// Metres covered by one texture repeat (drives UV density and normal strength).
    tile: f32,
    /// Extra normal-map exaggeration on top of the physical heights.
    bump: f32,
}

impl Mat {
    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub(super) fn spec(self) -> Spec {
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
    pub(super) fn uv(self) -> UvMode {
        UvMode::PerMetre(1.0 / self.spec().tile)
    }

    /// The glTF material referencing this material's texture set.
    pub(super) fn desc(self) -> MaterialDesc {
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
pub(super) fn paint_all(tex_dir: &Path, size: u32, seed: u64) -> Result<(), ToyshopError> {
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
pub(super) const ATLAS_LETTERS: [u8; 16] = *b"ABCDEFGHKMNOPSTY";

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
pub(super) fn atlas_cell(letter: u8) -> usize {
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
