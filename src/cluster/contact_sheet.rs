//! Contact sheets: one row of base-colour thumbnails per plan group.
//!
//! Layout, top to bottom one band per group (group `g` is decoder `g`):
//!
//! ```text
//! ┌──────┬────────────────────────────────────────────┐
//! │  0   │ ▣ ▣ ▣ ▣ ▣ …  (up to 16 thumbnails per line) │
//! ├──────┼────────────────────────────────────────────┤
//! │  1   │ ▣ ▣                                          │
//! └──────┴────────────────────────────────────────────┘
//! ```
//!
//! The label strip holds the group index in a built-in 3×5 pixel font on a colour that
//! is distinct per group. Thumbnails are [`THUMB`]² (smaller for very large plans, so that
//! the sheet stays within [`MAX_IMAGE_SIDE`]): the base colour, alpha ignored, averaged in
//! linear light from the smallest mip at least as large, stretched to a square. A group
//! of more than [`COLUMNS`] sets wraps onto further lines of its band.
//!
//! In a `divergence-aware` plan, the sets that the search moved away from their k-means
//! cluster (pulled into their group by screen co-occurrence, [`Plan::cooccurrence`])
//! carry a white corner triangle with a dark edge at the top left of their thumbnail.

use std::path::Path;

use super::ClusterError;
use super::embed::check_set;
use super::strategy::Plan;
use crate::texture::{
    CHANNELS, MAX_IMAGE_SIDE, TextureSet, linear_to_srgb, quantize_u8, srgb_to_linear,
    write_image_rgba8,
};

/// Thumbnail side in pixels (for plans that fit).
const THUMB: u32 = 64;

/// Thumbnails per line of a group's band.
const COLUMNS: u32 = 16;

/// Gap between thumbnails and around bands, in pixels.
const GAP: u32 = 4;

/// Background grey.
const BACKGROUND: [u8; 4] = [28, 28, 30, 255];

/// Fill of the marker on sets pulled into their group by co-occurrence.
const MARKER: [u8; 4] = [255, 255, 255, 255];

/// Edge of that marker.
const MARKER_EDGE: [u8; 4] = [20, 20, 20, 255];

/// 3×5 digit glyphs, rows top to bottom, 3 bits each (MSB = left pixel).
const DIGITS: [[u8; 5]; 10] = [
    [0b111, 0b101, 0b101, 0b101, 0b111],
    [0b010, 0b110, 0b010, 0b010, 0b111],
    [0b111, 0b001, 0b111, 0b100, 0b111],
    [0b111, 0b001, 0b111, 0b001, 0b111],
    [0b101, 0b101, 0b111, 0b001, 0b001],
    [0b111, 0b100, 0b111, 0b001, 0b111],
    [0b111, 0b100, 0b111, 0b101, 0b111],
    [0b111, 0b001, 0b010, 0b010, 0b010],
    [0b111, 0b101, 0b111, 0b101, 0b111],
    [0b111, 0b101, 0b111, 0b001, 0b111],
];

/// An RGBA8 contact sheet in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContactSheet {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width × height × 4` bytes, row-major.
    pub rgba: Vec<u8>,
}

impl ContactSheet {
    /// Fill a rectangle (clipped to the sheet).
    fn fill(&mut self, x0: u32, y0: u32, w: u32, h: u32, color: [u8; 4]) {
        for y in y0..(y0 + h).min(self.height) {
            for x in x0..(x0 + w).min(self.width) {
                let i = (y as usize * self.width as usize + x as usize) * 4;
                self.rgba[i..i + 4].copy_from_slice(&color);
            }
        }
    }

    /// The marker of a set pulled into its group by co-occurrence: a white right triangle
    /// of legs `side` in the corner at `(x0, y0)`, its hypotenuse drawn dark.
    fn corner_marker(&mut self, x0: u32, y0: u32, side: u32) {
        for row in 0..side {
            let len = side - row;
            self.fill(x0, y0 + row, len, 1, MARKER);
            self.fill(x0 + len.saturating_sub(1), y0 + row, 1, 1, MARKER_EDGE);
        }
    }

    /// Draw `n` in the 3×5 font with pixels of `scale`², top-left at `(x0, y0)`.
    fn number(&mut self, x0: u32, y0: u32, n: usize, scale: u32, color: [u8; 4]) {
        for (k, ch) in n.to_string().bytes().enumerate() {
            let glyph = DIGITS[usize::from(ch - b'0') % 10];
            let gx = x0 + k as u32 * 4 * scale;
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..3 {
                    if bits & (0b100 >> col) != 0 {
                        let (px, py) = (gx + col * scale, y0 + row as u32 * scale);
                        self.fill(px, py, scale, scale, color);
                    }
                }
            }
        }
    }
}

/// The geometry of a sheet.
struct Layout {
    thumb: u32,
    scale: u32,
    label_w: u32,
    width: u32,
    band_heights: Vec<u32>,
}

impl Layout {
    /// Pick the largest thumbnail size (64, 32, 16, 8) that keeps both sides within
    /// `MAX_IMAGE_SIDE`.
    fn new(plan: &Plan, file: &str) -> Result<Layout, ClusterError> {
        let digits = plan.groups.len().saturating_sub(1).to_string().len() as u32;
        let widest = plan
            .groups
            .iter()
            .map(|g| g.indices.len() as u32)
            .max()
            .unwrap_or(1)
            .clamp(1, COLUMNS);
        let mut last = (0u64, 0u64);
        for thumb in [THUMB, THUMB / 2, THUMB / 4, THUMB / 8] {
            let scale = (thumb / 20).max(1);
            let label_w = 2 * GAP + digits * 4 * scale;
            let width = label_w + widest * (thumb + GAP) + GAP;
            let band_heights: Vec<u32> = plan
                .groups
                .iter()
                .map(|g| {
                    let lines = (g.indices.len() as u32).div_ceil(COLUMNS).max(1);
                    (lines * (thumb + GAP) + GAP).max(5 * scale + 2 * GAP)
                })
                .collect();
            let height: u64 = band_heights.iter().map(|&h| h as u64).sum();
            if width <= MAX_IMAGE_SIDE && height <= MAX_IMAGE_SIDE as u64 {
                return Ok(Layout {
                    thumb,
                    scale,
                    label_w,
                    width,
                    band_heights,
                });
            }
            last = (width as u64, height);
        }
        Err(ClusterError::SheetTooLarge {
            file: file.to_string(),
            width: last.0,
            height: last.1,
        })
    }
}

/// A distinct, fairly saturated colour for group `g` (golden-angle hues).
fn group_color(g: usize) -> [u8; 4] {
    let hue = (g as f32 * 0.618_034).fract() * 6.0;
    let x = 1.0 - (hue % 2.0 - 1.0).abs();
    let (r, gr, b) = match hue as u32 {
        0 => (1.0, x, 0.0),
        1 => (x, 1.0, 0.0),
        2 => (0.0, 1.0, x),
        3 => (0.0, x, 1.0),
        4 => (x, 0.0, 1.0),
        _ => (1.0, 0.0, x),
    };
    let c = |v: f32| (60.0 + v * 150.0) as u8;
    [c(r), c(gr), c(b), 255]
}

/// The `t × t` base-colour thumbnail of a set (RGBA8, opaque).
fn thumbnail(set: &TextureSet, t: u32) -> Vec<u8> {
    let mip = set
        .mips
        .iter()
        .rev()
        .find(|m| m.width >= t && m.height >= t)
        .unwrap_or(&set.mips[0]);
    let (w, h) = (mip.width as u64, mip.height as u64);
    let lut: Vec<f32> = (0..=255u8)
        .map(|b| srgb_to_linear(b as f32 / 255.0))
        .collect();
    let t64 = t as u64;
    let mut out = Vec::with_capacity((t * t * 4) as usize);
    for ty in 0..t64 {
        let (y0, y1) = (ty * h / t64, ((ty + 1) * h / t64).max(ty * h / t64 + 1));
        for tx in 0..t64 {
            let (x0, x1) = (tx * w / t64, ((tx + 1) * w / t64).max(tx * w / t64 + 1));
            let mut acc = [0f32; 3];
            for y in y0..y1.min(h) {
                for x in x0..x1.min(w) {
                    let i = (y * w + x) as usize * CHANNELS;
                    for c in 0..3 {
                        acc[c] += lut[mip.texels[i + c] as usize];
                    }
                }
            }
            let n = ((y1.min(h) - y0) * (x1.min(w) - x0)).max(1) as f32;
            for a in acc {
                out.push(quantize_u8(linear_to_srgb(a / n)));
            }
            out.push(255);
        }
    }
    out
}

/// Draw the contact sheet of `plan` over `sets` (the plan is validated against them).
pub fn render_contact_sheet(
    sets: &[TextureSet],
    plan: &Plan,
) -> Result<ContactSheet, ClusterError> {
    render(sets, plan, "<memory>")
}

/// Draw the sheet; `file` names the output in errors.
fn render(sets: &[TextureSet], plan: &Plan, file: &str) -> Result<ContactSheet, ClusterError> {
    plan.validate(sets)?;
    for set in sets {
        check_set(set)?;
    }
    let layout = Layout::new(plan, file)?;
    let height: u32 = layout.band_heights.iter().sum();
    let mut sheet = ContactSheet {
        width: layout.width,
        height,
        rgba: BACKGROUND.repeat(layout.width as usize * height as usize),
    };
    let t = layout.thumb;
    let moved: std::collections::HashSet<&str> = plan
        .cooccurrence
        .iter()
        .flat_map(|c| c.moved.iter().map(String::as_str))
        .collect();
    let mut y = 0;
    for ((g, group), &band) in plan.groups.iter().enumerate().zip(&layout.band_heights) {
        let color = group_color(g);
        sheet.fill(0, y, layout.label_w, band, color);
        // Separator line above every band but the first.
        if g > 0 {
            sheet.fill(0, y, layout.width, 1, [90, 90, 96, 255]);
        }
        sheet.number(GAP, y + GAP, g, layout.scale, [255, 255, 255, 255]);
        for (k, &i) in group.indices.iter().enumerate() {
            let (col, line) = (k as u32 % COLUMNS, k as u32 / COLUMNS);
            let x0 = layout.label_w + GAP + col * (t + GAP);
            let y0 = y + GAP + line * (t + GAP);
            let thumb = thumbnail(&sets[i], t);
            for (row, pixels) in thumb.chunks_exact(t as usize * 4).enumerate() {
                let start = ((y0 as usize + row) * sheet.width as usize + x0 as usize) * 4;
                sheet.rgba[start..start + pixels.len()].copy_from_slice(pixels);
            }
            if moved.contains(sets[i].name.as_str()) {
                sheet.corner_marker(x0, y0, t / 3);
            }
        }
        y += band;
    }
    Ok(sheet)
}

/// Draw the contact sheet of `plan` over `sets` and write it as a PNG at `path`
/// (temporary file + rename).
pub fn write_contact_sheet(
    path: &Path,
    sets: &[TextureSet],
    plan: &Plan,
) -> Result<(), ClusterError> {
    let sheet = render(sets, plan, &path.display().to_string())?;
    write_image_rgba8(path, sheet.width, sheet.height, &sheet.rgba)?;
    Ok(())
}
