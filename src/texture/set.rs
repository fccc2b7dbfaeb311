//! Texture sets: what one material's textures become.
//!
//! A [`TextureSetDesc`] is the identity of a set (its image per slot plus the ARM flag)
//! without any decoding; it is hashable so that materials sharing the same images share
//! one set ([`scene_texture_sets`]). [`TextureSetDesc::load`] reads every image's header
//! first and refuses sets whose images disagree in size by more than
//! [`MAX_RESAMPLE_FACTOR`] per side or that would exceed the memory budget; then it decodes
//! the images, resamples them to a common size (the largest width and height among them,
//! optionally capped) and
//! fills the [`CHANNELS`] canonical channels described in [`crate::texture`]:
//! - base colour RGB ← base colour texture RGB (sRGB values kept as they are), alpha ← its A;
//! - normal X, Y ← normal map R, G (OpenGL convention);
//! - occlusion ← occlusion texture R, or metallic-roughness R when `occlusion_from_arm`;
//! - roughness ← metallic-roughness G, metallic ← its B;
//! - emissive RGB ← emissive texture RGB.
//!
//! A grayscale image reads as R = G = B = gray. Channels without a texture hold their
//! neutral value ([`Channel::neutral`]) and are left out of [`TextureSet::present`]: the
//! material's constant factors multiply in the shader, as in glTF. Resampling is a
//! separable tent filter (bilinear when enlarging, area-aware when shrinking), done in
//! linear light for the sRGB slots.

use std::collections::HashMap;

use super::image_io::{DecodedImage, ImageInfo, decode, probe};
use super::mips::build_mip_chain;
use super::{
    CHANNELS, Channel, ChannelMask, GROUPS, TextureError, linear_to_srgb, quantize_u8,
    srgb_to_linear,
};
use crate::scene::{ImageSource, Material};

/// A texture slot of a glTF metallic-roughness material.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// Base colour (sRGB RGB + linear alpha).
    BaseColor,
    /// Tangent-space normal map.
    Normal,
    /// Metallic (B) and roughness (G); occlusion (R) when ARM-packed.
    MetallicRoughness,
    /// Occlusion (R).
    Occlusion,
    /// Emissive (sRGB RGB).
    Emissive,
}

impl Slot {
    /// All slots, in the order sets list them.
    pub const ALL: [Slot; 5] = [
        Slot::BaseColor,
        Slot::Normal,
        Slot::MetallicRoughness,
        Slot::Occlusion,
        Slot::Emissive,
    ];

    /// The slot's snake_case name (`base_color`, `metallic_roughness`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Slot::BaseColor => "base_color",
            Slot::Normal => "normal",
            Slot::MetallicRoughness => "metallic_roughness",
            Slot::Occlusion => "occlusion",
            Slot::Emissive => "emissive",
        }
    }

    /// True for the slots whose RGB is sRGB-encoded (base colour, emissive).
    pub const fn is_srgb(self) -> bool {
        matches!(self, Slot::BaseColor | Slot::Emissive)
    }
}

/// The identity of a texture set: the image in each slot and how occlusion is read.
/// Two materials with equal descriptions share one set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TextureSetDesc {
    /// Base colour image.
    pub base_color: Option<ImageSource>,
    /// Normal map.
    pub normal: Option<ImageSource>,
    /// Metallic-roughness (or ARM/ORM) image.
    pub metallic_roughness: Option<ImageSource>,
    /// Occlusion image.
    pub occlusion: Option<ImageSource>,
    /// Emissive image.
    pub emissive: Option<ImageSource>,
    /// Occlusion is read from the R channel of `metallic_roughness` (ARM packing). Takes
    /// precedence over `occlusion`; always false when `metallic_roughness` is absent.
    pub occlusion_from_arm: bool,
}

impl TextureSetDesc {
    /// The set of a material, or `None` when the material has no texture at all.
    pub fn from_material(material: &Material) -> Option<TextureSetDesc> {
        let t = &material.textures;
        let image = |r: &Option<crate::scene::TextureRef>| r.as_ref().map(|r| r.image.clone());
        let desc = TextureSetDesc {
            base_color: image(&t.base_color),
            normal: image(&t.normal),
            metallic_roughness: image(&t.metallic_roughness),
            occlusion: image(&t.occlusion),
            emissive: image(&t.emissive),
            occlusion_from_arm: material.occlusion_from_arm && t.metallic_roughness.is_some(),
        };
        let textured = desc.sources().next().is_some();
        textured.then_some(desc)
    }

    /// The image in `slot`, if any.
    pub fn source(&self, slot: Slot) -> Option<&ImageSource> {
        match slot {
            Slot::BaseColor => self.base_color.as_ref(),
            Slot::Normal => self.normal.as_ref(),
            Slot::MetallicRoughness => self.metallic_roughness.as_ref(),
            Slot::Occlusion => self.occlusion.as_ref(),
            Slot::Emissive => self.emissive.as_ref(),
        }
    }

    /// The present slots and their images, in [`Slot::ALL`] order.
    pub fn sources(&self) -> impl Iterator<Item = (Slot, &ImageSource)> {
        Slot::ALL
            .into_iter()
            .filter_map(|s| self.source(s).map(|src| (s, src)))
    }

    /// The set's name: the stem of its base colour image without suffixes such as
    /// `_diff_1k`, `_basecolor` or `_BaseColor`, else that of the first present image;
    /// `untextured` for an empty description.
    pub fn name(&self) -> String {
        self.sources().next().map_or_else(
            || "untextured".to_string(),
            |(_, src)| strip_suffixes(&src.stem()),
        )
    }

    /// Decode the images and build the canonical set with its full mip chain.
    ///
    /// Without `allow_missing`, the first image that is missing or cannot be decoded is
    /// returned as the error (it names the file). With it, such images are skipped (their
    /// channels keep neutral values) and recorded in [`LoadedSet::missing`].
    pub fn load(&self, opts: &LoadOptions) -> Result<LoadedSet, TextureError> {
        let mut missing = Vec::new();
        // The slots read (occlusion only when it is not packed into metallic-roughness),
        // each distinct image once (FlightHelmet puts one ORM image in two slots).
        let mut slots: Vec<Slot> = [
            Slot::BaseColor,
            Slot::Normal,
            Slot::MetallicRoughness,
            Slot::Emissive,
        ]
        .into_iter()
        .filter(|&s| self.source(s).is_some())
        .collect();
        let arm = self.occlusion_from_arm && slots.contains(&Slot::MetallicRoughness);
        if !arm && self.occlusion.is_some() {
            slots.push(Slot::Occlusion);
        }
        // Headers first: sizes are checked before any pixel is decoded.
        let mut images: Vec<(&ImageSource, Slot, ImageInfo)> = Vec::new();
        let mut uses: Vec<(Slot, usize)> = Vec::new();
        for slot in slots {
            let Some(src) = self.source(slot) else {
                continue;
            };
            if let Some(i) = images.iter().position(|(s, _, _)| *s == src) {
                uses.push((slot, i));
                continue;
            }
            match probe(src) {
                Ok(info) => {
                    images.push((src, slot, info));
                    uses.push((slot, images.len() - 1));
                }
                Err(e) if opts.allow_missing && !matches!(e, TextureError::OverBudget(_)) => {
                    missing.push(format!("{}: {e}", slot.name()));
                }
                Err(e) => return Err(e),
            }
        }

        // Common size: the largest of the images, capped by `max_size`.
        let (mut width, mut height) = (1u32, 1u32);
        for (_, _, info) in &images {
            width = width.max(info.width);
            height = height.max(info.height);
        }
        if let Some(max) = opts.max_size {
            let max = max.max(1);
            let side = width.max(height);
            if side > max {
                let scale = max as f64 / side as f64;
                width = ((width as f64 * scale).round() as u32).clamp(1, max);
                height = ((height as f64 * scale).round() as u32).clamp(1, max);
            }
        }
        self.check_sizes(&images, width, height)?;

        // Decode, after the budget check of everything the load holds at once.
        let mut decoded: Vec<DecodedImage> = Vec::with_capacity(images.len());
        for (src, slot, _) in &images {
            match decode(src) {
                Ok(img) => decoded.push(img),
                Err(e) if opts.allow_missing && !matches!(e, TextureError::OverBudget(_)) => {
                    missing.push(format!("{}: {e}", slot.name()));
                    decoded.push(DecodedImage {
                        width: 0,
                        height: 0,
                        channels: 0,
                        samples: super::Samples::U8(Vec::new()),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        let image = |i: usize| decoded.get(i).filter(|d| d.width > 0);

        let n = width as usize * height as usize;
        let neutral: [u8; CHANNELS] =
            std::array::from_fn(|c| Channel::from_index(c).map_or(255, Channel::neutral_u8));
        let mut texels: Vec<u8> = neutral.iter().copied().cycle().take(n * CHANNELS).collect();
        let mut present = ChannelMask::NONE;
        for &(slot, i) in &uses {
            let Some(img) = image(i) else { continue };
            let plane = to_plane(img, width, height, slot.is_srgb());
            // (source component, destination channel) pairs for this slot.
            let (routes, mask): (&[(usize, Channel)], ChannelMask) = match slot {
                Slot::BaseColor => (
                    &[
                        (0, Channel::BaseR),
                        (1, Channel::BaseG),
                        (2, Channel::BaseB),
                        (3, Channel::Alpha),
                    ],
                    if img.has_alpha() {
                        ChannelMask::BASE_COLOR | ChannelMask::ALPHA
                    } else {
                        ChannelMask::BASE_COLOR
                    },
                ),
                Slot::Normal => (
                    &[(0, Channel::NormalX), (1, Channel::NormalY)],
                    ChannelMask::NORMAL,
                ),
                Slot::MetallicRoughness if arm => (
                    &[
                        (0, Channel::Occlusion),
                        (1, Channel::Roughness),
                        (2, Channel::Metallic),
                    ],
                    ChannelMask::OCCLUSION | ChannelMask::ROUGHNESS | ChannelMask::METALLIC,
                ),
                Slot::MetallicRoughness => (
                    &[(1, Channel::Roughness), (2, Channel::Metallic)],
                    ChannelMask::ROUGHNESS | ChannelMask::METALLIC,
                ),
                Slot::Occlusion => (&[(0, Channel::Occlusion)], ChannelMask::OCCLUSION),
                Slot::Emissive => (
                    &[
                        (0, Channel::EmissiveR),
                        (1, Channel::EmissiveG),
                        (2, Channel::EmissiveB),
                    ],
                    ChannelMask::EMISSIVE,
                ),
            };
            for (texel, px) in texels.chunks_exact_mut(CHANNELS).zip(&plane) {
                for &(k, c) in routes {
                    texel[c.index()] = quantize_u8(px[k]);
                }
            }
            present |= mask;
        }

        let mip0 = SetMip {
            width,
            height,
            texels,
        };
        let lossy = images
            .iter()
            .filter_map(|(src, slot, info)| {
                info.block_format.map(|format| {
                    format!(
                        "{}: {} is {format}-compressed: the source was already lossy",
                        slot.name(),
                        src.display_name()
                    )
                })
            })
            .collect();
        Ok(LoadedSet {
            set: TextureSet::from_mip0(self.name(), present, mip0),
            missing,
            lossy,
        })
    }
}

/// Most a set's image is enlarged to the set's common size, per axis. Images that
/// disagree more (a 16384×1 base colour with a 1×16384 roughness map) are refused: the
/// set would be 16384² texels made from 32768.
pub const MAX_RESAMPLE_FACTOR: u64 = 16;

impl TextureSetDesc {
    /// Check the images' sizes against the common size `width × height`: each enlarged
    /// at most [`MAX_RESAMPLE_FACTOR`]× per axis, and everything the load holds at once
    /// (decoded images, one resampling working set, the canonical texels and the mip
    /// chain) within the memory budget.
    fn check_sizes(
        &self,
        images: &[(&ImageSource, Slot, ImageInfo)],
        width: u32,
        height: u32,
    ) -> Result<(), TextureError> {
        use super::budget::product;
        let sizes = || {
            images
                .iter()
                .map(|(src, slot, i)| {
                    format!(
                        "{} {} is {}×{}",
                        slot.name(),
                        src.display_name(),
                        i.width,
                        i.height
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (src, _, info) in images {
            let fx = u64::from(width).div_ceil(info.width.into());
            let fy = u64::from(height).div_ceil(info.height.into());
            let factor = fx.max(fy);
            if factor > MAX_RESAMPLE_FACTOR {
                return Err(TextureError::SizeMismatch {
                    set: self.name(),
                    reason: format!(
                        "{}: resampling to the common {width}×{height} would enlarge {} {factor}× (at most {MAX_RESAMPLE_FACTOR}× per side)",
                        sizes(),
                        src.display_name()
                    ),
                });
            }
        }
        // Images of different shapes are stretched to the common size: allowed (glTF does
        // not forbid it), but rarely meant, so said.
        let first = images
            .first()
            .map(|(_, _, i)| (u64::from(i.width), u64::from(i.height)));
        if images.iter().any(|(_, _, i)| {
            first.is_some_and(|(w, h)| u64::from(i.width) * h != u64::from(i.height) * w)
        }) {
            log::warn!(
                "texture set `{}`: its images differ in aspect ratio ({}); each is stretched to {width}×{height}",
                self.name(),
                sizes()
            );
        }
        let texels = product(&[width.into(), height.into()]);
        let decoded: u64 = images
            .iter()
            .map(|(_, _, i)| i.decoded_bytes())
            .fold(0, u64::saturating_add);
        // One slot's resampling: its source, a horizontal pass and the result as f32 RGBA.
        let plane = images
            .iter()
            .map(|(_, _, i)| {
                let src = product(&[i.width.into(), i.height.into()]);
                let tmp = product(&[width.into(), i.height.into()]);
                src.saturating_add(tmp)
                    .saturating_add(texels)
                    .saturating_mul(16)
            })
            .max()
            .unwrap_or(0);
        // Canonical texels with the mip chain (4/3 of mip 0).
        let set = product(&[texels, CHANNELS as u64, 4]) / 3;
        let needed = decoded.saturating_add(plane).saturating_add(set);
        super::budget::check(
            || {
                format!(
                    "the texture set `{}` ({width}×{height}; {})",
                    self.name(),
                    sizes()
                )
            },
            needed,
            super::budget::limit(),
        )?;
        Ok(())
    }
}

/// How [`TextureSetDesc::load`] treats missing images and sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Skip (and record) missing or undecodable images instead of failing.
    pub allow_missing: bool,
    /// Downscale so that the largest side is at most this many texels (tests, tiny renders).
    pub max_size: Option<u32>,
}

/// The result of [`TextureSetDesc::load`].
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedSet {
    /// The set.
    pub set: TextureSet,
    /// One line per skipped image (`<slot>: <error naming the file>`); empty unless
    /// [`LoadOptions::allow_missing`] was set.
    pub missing: Vec<String>,
    /// One line per image that was block-compressed (BC1–BC7 in a DDS or KTX2 file):
    /// its block artefacts are part of what the set holds.
    pub lossy: Vec<String>,
}

/// A loaded texture set: canonical channels and the whole mip chain.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureSet {
    /// The set's name ([`TextureSetDesc::name`]).
    pub name: String,
    /// Width of mip 0.
    pub width: u32,
    /// Height of mip 0.
    pub height: u32,
    /// Channels that come from a texture; the others hold neutral values.
    pub present: ChannelMask,
    /// Mip levels from `width × height` down to 1×1.
    pub mips: Vec<SetMip>,
}

impl TextureSet {
    /// A set named `name` with the channels `present`, whose mip 0 is `mip0`, with its full
    /// mip chain ([`build_mip_chain`]).
    pub fn from_mip0(name: impl Into<String>, present: ChannelMask, mip0: SetMip) -> TextureSet {
        TextureSet {
            name: name.into(),
            width: mip0.width,
            height: mip0.height,
            present,
            mips: build_mip_chain(mip0),
        }
    }

    /// A `width × height` set named `name` with the channels `present`, whose mip-0 texel
    /// at (x, y) is `texel(x, y)` (called row by row, left to right), with its full mip
    /// chain.
    pub fn from_fn(
        name: impl Into<String>,
        present: ChannelMask,
        (width, height): (u32, u32),
        mut texel: impl FnMut(u32, u32) -> [u8; CHANNELS],
    ) -> TextureSet {
        let mut texels = Vec::with_capacity(width as usize * height as usize * CHANNELS);
        for y in 0..height {
            for x in 0..width {
                texels.extend(texel(x, y));
            }
        }
        Self::from_mip0(
            name,
            present,
            SetMip {
                width,
                height,
                texels,
            },
        )
    }

    /// A smooth synthetic `width × height` set for fixtures and tests (see
    /// [`from_fn`](Self::from_fn)): sinusoidal base colour (red along x, green along y),
    /// normal X and roughness with a period of `period` texels, shifted by `phase` radians,
    /// a bilinear ramp in blue, normal Y at 0.5, opaque alpha, full occlusion, no metal or
    /// emission.
    pub fn smooth(
        name: impl Into<String>,
        present: ChannelMask,
        size: (u32, u32),
        period: f64,
        phase: f64,
    ) -> TextureSet {
        Self::from_fn(name, present, size, |x, y| {
            let (fx, fy) = (f64::from(x) / period, f64::from(y) / period);
            let c = |v: f64| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
            let s = |a: f64| 0.5 + 0.4 * (a * std::f64::consts::TAU + phase).sin();
            [
                c(s(fx)),
                c(s(fy)),
                c(0.3 + 0.4 * fx * fy),
                255,
                c(s(fx + fy)),
                c(0.5),
                255,
                c(s(fx - fy)),
                0,
                0,
                0,
                0,
            ]
        })
    }

    /// Leave the channels outside `keep` out of [`present`](Self::present) and give them
    /// their neutral value in every mip, as if the set had no texture for them.
    pub fn keep_channels(&mut self, keep: ChannelMask) {
        let dropped = ChannelMask(self.present.0 & !keep.0);
        if dropped.is_empty() {
            return;
        }
        self.present = self.present & keep;
        for mip in &mut self.mips {
            for texel in mip.texels.chunks_exact_mut(CHANNELS) {
                for c in dropped.channels() {
                    texel[c.index()] = c.neutral_u8();
                }
            }
        }
    }

    /// A 1×1 set holding only neutral values (no channel present): what a material
    /// without textures samples, so that its constant factors apply unchanged.
    pub fn neutral() -> TextureSet {
        let texels = Channel::ALL.iter().map(|c| c.neutral_u8()).collect();
        TextureSet {
            name: "neutral".into(),
            width: 1,
            height: 1,
            present: ChannelMask::NONE,
            mips: vec![SetMip {
                width: 1,
                height: 1,
                texels,
            }],
        }
    }
}

/// One mip level: `width × height` texels of [`CHANNELS`] interleaved bytes. Group `g`
/// of texel `i` is `texels[i * 12 + 4 * g..][..4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetMip {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// `width * height * CHANNELS` bytes, row-major.
    pub texels: Vec<u8>,
}

impl SetMip {
    /// The RGBA8 plane of channel group `g` (0–2), row-major, ready for upload; empty for
    /// `g >= GROUPS`.
    pub fn group(&self, g: usize) -> Vec<u8> {
        if g >= GROUPS {
            return Vec::new();
        }
        self.texels
            .chunks_exact(CHANNELS)
            .flat_map(|t| t[4 * g..4 * g + 4].iter().copied())
            .collect()
    }

    /// The [`CHANNELS`] bytes of texel `(x, y)`, if inside the level.
    pub fn texel(&self, x: u32, y: u32) -> Option<&[u8]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = y as usize * self.width as usize + x as usize;
        self.texels.get(i * CHANNELS..(i + 1) * CHANNELS)
    }
}

/// The material constants of each of `sets` texture sets in canonical channel order
/// (base colour RGBA, normal scale twice, occlusion strength, roughness, metallic,
/// emissive RGB): the factors of the first material using the set, all 1 for a set no
/// material uses. `material_sets` is [`scene_texture_sets`]'s second result. glTF
/// semantics: the shader uses a constant for an absent channel and multiplies a present
/// one by it; a package stores them per set.
pub fn set_constants(
    materials: &[Material],
    material_sets: &[Option<usize>],
    sets: usize,
) -> Vec<[f32; CHANNELS]> {
    let mut out = vec![[1.0; CHANNELS]; sets];
    let mut seen = vec![false; sets];
    for (m, s) in materials.iter().zip(material_sets) {
        let Some(s) = *s else { continue };
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let b = m.base_color_factor;
        let e = m.emissive_factor;
        out[s] = [
            b[0],
            b[1],
            b[2],
            b[3],
            m.normal_scale,
            m.normal_scale,
            m.occlusion_strength,
            m.roughness_factor,
            m.metallic_factor,
            e[0],
            e[1],
            e[2],
        ];
    }
    out
}

/// The distinct texture sets of `materials` and, per material, the index of its set
/// (`None` for materials without any texture). Sets are numbered in order of first use.
pub fn scene_texture_sets(materials: &[Material]) -> (Vec<TextureSetDesc>, Vec<Option<usize>>) {
    let mut sets: Vec<TextureSetDesc> = Vec::new();
    let mut index: HashMap<TextureSetDesc, usize> = HashMap::new();
    let material_sets = materials
        .iter()
        .map(|m| {
            let desc = TextureSetDesc::from_material(m)?;
            Some(*index.entry(desc).or_insert_with_key(|d| {
                sets.push(d.clone());
                sets.len() - 1
            }))
        })
        .collect();
    (sets, material_sets)
}

/// The channels whose texture values can show in `material`'s appearance: all, except
/// those its constants make irrelevant under glTF semantics, which the renderer follows
/// (an absent channel is the neutral value times the factor, [`crate::texture`]):
/// base colour when the base colour factor's RGB is 0, alpha for an `OPAQUE` material
/// (glTF ignores it), the normal when the normal scale is 0 (flat), occlusion when its
/// strength is 0, roughness and metallic when their factor is 0, emissive when the
/// emissive factor is 0. A channel that no material of a set needs is left out of the
/// set's `present` mask ([`TextureSet::keep_channels`]): it gets loss weight 0, is not
/// trained and is not scored.
pub fn relevant_channels(material: &Material) -> ChannelMask {
    let [r, g, b, _] = material.base_color_factor;
    let irrelevant = [
        ([r, g, b] == [0.0; 3], ChannelMask::BASE_COLOR),
        (
            material.alpha_mode == crate::scene::AlphaMode::Opaque,
            ChannelMask::ALPHA,
        ),
        (material.normal_scale == 0.0, ChannelMask::NORMAL),
        (material.occlusion_strength == 0.0, ChannelMask::OCCLUSION),
        (material.roughness_factor == 0.0, ChannelMask::ROUGHNESS),
        (material.metallic_factor == 0.0, ChannelMask::METALLIC),
        (material.emissive_factor == [0.0; 3], ChannelMask::EMISSIVE),
    ];
    irrelevant
        .into_iter()
        .filter(|(zeroed, _)| !zeroed)
        .fold(ChannelMask::NONE, |mask, (_, channels)| mask | channels)
}

/// Per set of `sets`, the channels some material using it needs: the union of
/// [`relevant_channels`] over those materials (`material_sets` is [`scene_texture_sets`]'s
/// second result). A channel that every material of a set zeroes by its constants is
/// irrelevant to the set.
pub fn set_relevant_channels(
    materials: &[Material],
    material_sets: &[Option<usize>],
    sets: usize,
) -> Vec<ChannelMask> {
    let mut relevant = vec![ChannelMask::NONE; sets];
    for (material, set) in materials.iter().zip(material_sets) {
        if let Some(mask) = set.and_then(|s| relevant.get_mut(s)) {
            *mask |= relevant_channels(material);
        }
    }
    relevant
}

/// A scene's texture sets, decoded once: what the renderer uploads and what the scene's
/// NTC packages are compressed from (`packages::ScenePackages`), so neither decodes the
/// images again.
#[derive(Clone, Debug)]
pub struct SceneTextures {
    /// The distinct sets' identities, in order of first use ([`scene_texture_sets`]).
    pub descs: Vec<TextureSetDesc>,
    /// Per set, its decoded channels, named uniquely as [`crate::inputs::InputSets`]
    /// names them, without the channels no material using it needs
    /// ([`set_relevant_channels`]).
    pub sets: Vec<TextureSet>,
    /// Per material, the index of its set (`None`: constants only).
    pub material_sets: Vec<Option<usize>>,
    /// One line per image skipped under [`LoadOptions::allow_missing`] (`<slot>: <error
    /// naming the file>`).
    pub missing: Vec<String>,
    /// How the sets were loaded.
    pub options: LoadOptions,
}

impl SceneTextures {
    /// Decode the texture sets of `materials` (in parallel) with `options`.
    pub fn load(materials: &[Material], options: &LoadOptions) -> Result<Self, TextureError> {
        let (descs, material_sets) = scene_texture_sets(materials);
        let names = unique_names(&descs);
        let relevant = set_relevant_channels(materials, &material_sets, descs.len());
        let mut missing = Vec::new();
        let sets = load_parallel(&descs, options)?
            .into_iter()
            .zip(names)
            .zip(relevant)
            .map(|((loaded, name), relevant)| {
                missing.extend(loaded.missing);
                let mut set = TextureSet { name, ..loaded.set };
                set.keep_channels(relevant);
                set
            })
            .collect();
        Ok(Self {
            descs,
            sets,
            material_sets,
            missing,
            options: *options,
        })
    }
}

/// Set names made unique by suffixing `#2`, `#3`, … to repeats.
pub(crate) fn unique_names(descs: &[TextureSetDesc]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(descs.len());
    for d in descs {
        let base = d.name();
        let mut name = base.clone();
        let mut n = 2;
        while out.contains(&name) {
            name = format!("{base}#{n}");
            n += 1;
        }
        out.push(name);
    }
    out
}

/// `f` of every item on all cores (each worker takes the next unclaimed item), in the
/// items' order.
pub fn map_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(r);
                    }
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .ok()
                .flatten()
                .expect("every item index is claimed by exactly one worker")
        })
        .collect()
}

/// Decode sets on all cores, keeping the order.
pub fn load_parallel(
    sets: &[TextureSetDesc],
    opts: &LoadOptions,
) -> Result<Vec<LoadedSet>, TextureError> {
    map_parallel(sets, |desc| desc.load(opts))
        .into_iter()
        .collect()
}

/// Suffix tokens removed from image stems to name a set (compared case-insensitively).
const NAME_SUFFIXES: &[&str] = &[
    "nor_gl",
    "nor_dx",
    "base_color",
    "basecolor",
    "basecolour",
    "diffuse",
    "diff",
    "albedo",
    "color",
    "colour",
    "col",
    "normal",
    "nor",
    "nrm",
    "metallicroughness",
    "occlusionroughmetal",
    "arm",
    "orm",
    "roughness",
    "rough",
    "occlusion",
    "ao",
    "emissive",
    "emission",
];

/// Strip resolution (`_1k`, `_2K`, ...) and slot suffixes from an image stem.
fn strip_suffixes(stem: &str) -> String {
    let mut name = stem;
    loop {
        let lower = name.to_ascii_lowercase();
        let token_len = NAME_SUFFIXES
            .iter()
            .find(|t| lower.ends_with(&format!("_{t}")))
            .map(|t| t.len() + 1)
            .or_else(|| {
                // Resolution tokens: `_<digits>k`.
                let (head, last) = lower.rsplit_once('_')?;
                let digits = last.strip_suffix('k')?;
                (!head.is_empty()
                    && !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit()))
                .then_some(last.len() + 1)
            });
        match token_len {
            Some(len) if len < name.len() => name = &name[..name.len() - len],
            _ => return name.to_string(),
        }
    }
}

/// Normalised RGBA of `img` at `width × height`: a direct copy when the size matches,
/// otherwise resampled with a separable tent filter (in linear light when `srgb`; the
/// result is re-encoded so that it is sRGB again).
fn to_plane(img: &DecodedImage, width: u32, height: u32, srgb: bool) -> Vec<[f32; 4]> {
    let (sw, sh) = (img.width as usize, img.height as usize);
    let mut src: Vec<[f32; 4]> = Vec::with_capacity(sw * sh);
    for y in 0..img.height {
        for x in 0..img.width {
            src.push(img.rgba(x, y));
        }
    }
    if (img.width, img.height) == (width, height) {
        return src;
    }
    if srgb {
        for p in &mut src {
            for v in &mut p[..3] {
                *v = srgb_to_linear(*v);
            }
        }
    }
    let (dw, dh) = (width as usize, height as usize);
    // Horizontal pass: sw × sh → dw × sh.
    let wx = axis_weights(sw, dw);
    let mut tmp = vec![[0f32; 4]; dw * sh];
    for y in 0..sh {
        let row = &src[y * sw..(y + 1) * sw];
        for (x, taps) in wx.iter().enumerate() {
            tmp[y * dw + x] = weighted_sum(taps.iter().map(|&(i, w)| (&row[i], w)));
        }
    }
    drop(src);
    // Vertical pass: dw × sh → dw × dh.
    let wy = axis_weights(sh, dh);
    let mut out = vec![[0f32; 4]; dw * dh];
    for (y, taps) in wy.iter().enumerate() {
        for x in 0..dw {
            out[y * dw + x] = weighted_sum(taps.iter().map(|&(i, w)| (&tmp[i * dw + x], w)));
        }
    }
    if srgb {
        for p in &mut out {
            for v in &mut p[..3] {
                *v = linear_to_srgb(v.clamp(0.0, 1.0));
            }
        }
    }
    out
}

/// Σ wᵢ·pᵢ over the taps.
fn weighted_sum<'a>(taps: impl Iterator<Item = (&'a [f32; 4], f32)>) -> [f32; 4] {
    let mut acc = [0f32; 4];
    for (p, w) in taps {
        for k in 0..4 {
            acc[k] += p[k] * w;
        }
    }
    acc
}

/// Tent-filter taps `(source index, weight)` for each of `m` destination texels along an
/// axis of `n` source texels. The radius is one source texel when enlarging (bilinear)
/// and one destination texel (in source units) when shrinking; edges clamp. Weights sum
/// to 1.
fn axis_weights(n: usize, m: usize) -> Vec<Vec<(usize, f32)>> {
    let scale = n as f64 / m as f64;
    let radius = scale.max(1.0);
    (0..m)
        .map(|i| {
            let center = (i as f64 + 0.5) * scale - 0.5;
            let lo = (center - radius).floor() as i64 + 1;
            let hi = (center + radius).ceil() as i64 - 1;
            let mut taps: Vec<(usize, f32)> = Vec::new();
            for s in lo..=hi {
                let w = 1.0 - ((s as f64 - center).abs() / radius);
                if w <= 0.0 {
                    continue;
                }
                let idx = s.clamp(0, n as i64 - 1) as usize;
                match taps.iter_mut().find(|(j, _)| *j == idx) {
                    Some((_, acc)) => *acc += w as f32,
                    None => taps.push((idx, w as f32)),
                }
            }
            if taps.is_empty() {
                // Unreachable for n, m ≥ 1 (the nearest texel always has weight > 0), but
                // never divide by zero.
                taps.push((center.round().clamp(0.0, n as f64 - 1.0) as usize, 1.0));
            }
            let total: f32 = taps.iter().map(|(_, w)| w).sum();
            for (_, w) in &mut taps {
                *w /= total;
            }
            taps
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{MaterialTextures, TextureRef};
    use crate::texture::manifest::read_manifest;
    use image::DynamicImage;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    /// More items than cores, each taking a different time: every result in its item's
    /// place, each item mapped once; no items, no results.
    #[test]
    fn map_parallel_keeps_the_order_and_maps_each_item_once() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let items: Vec<u64> = (0..37).collect();
        let out = map_parallel(&items, |&i| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_micros((37 - i) * 50));
            i * i
        });
        assert_eq!(out, items.iter().map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(calls.into_inner(), 37);
        assert!(map_parallel(&[] as &[u8], |&b| b).is_empty());
    }

    const BISTRO: &str = "../shared/assets/bistro_texture_sets/manifest.csv";

    fn file(p: &str) -> ImageSource {
        ImageSource::File(PathBuf::from(p))
    }

    fn tref(image: ImageSource) -> Option<TextureRef> {
        Some(TextureRef {
            image,
            tex_coord: 0,
        })
    }

    fn embedded(name: &str, img: DynamicImage) -> ImageSource {
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png)
            .expect("encode");
        ImageSource::Embedded {
            name: name.into(),
            bytes: Arc::from(out.into_inner()),
        }
    }

    fn material(name: &str, textures: MaterialTextures, arm: bool) -> Material {
        Material {
            name: name.into(),
            textures,
            occlusion_from_arm: arm,
            ..Material::default()
        }
    }

    #[test]
    fn zeroed_factors_make_channels_irrelevant() {
        let m = Material::default();
        // The default is opaque: only alpha is irrelevant (emissive factor 0 too).
        assert_eq!(
            relevant_channels(&m),
            ChannelMask(ChannelMask::ALL.0 & !(ChannelMask::ALPHA | ChannelMask::EMISSIVE).0)
        );
        let m = Material {
            metallic_factor: 0.0,
            occlusion_strength: 0.0,
            emissive_factor: [0.0, 0.5, 0.0],
            alpha_mode: crate::scene::AlphaMode::Mask { cutoff: 0.5 },
            ..Material::default()
        };
        let relevant = relevant_channels(&m);
        assert!(!relevant.intersects(ChannelMask::METALLIC | ChannelMask::OCCLUSION));
        assert!(
            relevant.contains(ChannelMask::ALPHA | ChannelMask::EMISSIVE | ChannelMask::ROUGHNESS)
        );
        let flat_black = Material {
            base_color_factor: [0.0, 0.0, 0.0, 1.0],
            normal_scale: 0.0,
            roughness_factor: 0.0,
            ..Material::default()
        };
        assert!(
            !relevant_channels(&flat_black)
                .intersects(ChannelMask::BASE_COLOR | ChannelMask::NORMAL | ChannelMask::ROUGHNESS)
        );
    }

    #[test]
    fn dropped_channels_become_neutral_in_every_mip() {
        let mip0 = SetMip {
            width: 2,
            height: 2,
            texels: vec![7; 4 * CHANNELS],
        };
        let mut set = TextureSet::from_mip0("orm", ChannelMask::ALL, mip0);
        set.keep_channels(ChannelMask(ChannelMask::ALL.0 & !ChannelMask::METALLIC.0));
        assert!(!set.present.intersects(ChannelMask::METALLIC));
        assert!(set.present.contains(ChannelMask::ROUGHNESS));
        for mip in &set.mips {
            for texel in mip.texels.chunks_exact(CHANNELS) {
                assert_eq!(
                    texel[Channel::Metallic.index()],
                    Channel::Metallic.neutral_u8()
                );
                assert_eq!(texel[Channel::Roughness.index()], 7);
            }
        }
    }

    #[test]
    fn set_constants_come_from_the_first_material_of_each_set() {
        let tex = MaterialTextures {
            base_color: tref(file("t/a_diff.png")),
            ..Default::default()
        };
        let first = Material {
            base_color_factor: [0.5, 0.25, 1.0, 0.75],
            metallic_factor: 0.1,
            roughness_factor: 0.2,
            emissive_factor: [0.3, 0.4, 0.6],
            normal_scale: 0.9,
            occlusion_strength: 0.8,
            ..material("first", tex.clone(), false)
        };
        let second = Material {
            base_color_factor: [0.0; 4],
            ..material("second", tex, false)
        };
        let materials = [
            material("plain", MaterialTextures::default(), false),
            first,
            second,
        ];
        let (sets, material_sets) = scene_texture_sets(&materials);
        assert_eq!(material_sets, vec![None, Some(0), Some(0)]);
        let c = set_constants(&materials, &material_sets, sets.len() + 1);
        assert_eq!(
            c[0],
            [0.5, 0.25, 1.0, 0.75, 0.9, 0.9, 0.8, 0.2, 0.1, 0.3, 0.4, 0.6]
        );
        assert_eq!(c[1], [1.0; CHANNELS], "a set no material uses");
    }

    #[test]
    fn materials_share_sets() {
        let sofa = MaterialTextures {
            base_color: tref(file("t/sofa_03_diff_1k.jpg")),
            normal: tref(file("t/sofa_03_nor_gl_1k.jpg")),
            metallic_roughness: tref(file("t/sofa_03_rough_1k.jpg")),
            ..Default::default()
        };
        let orm = file("fh/FlightHelmet_Materials_RubberWoodMat_OcclusionRoughMetal.png");
        let helmet = MaterialTextures {
            base_color: tref(file(
                "fh/FlightHelmet_Materials_RubberWoodMat_BaseColor.png",
            )),
            normal: tref(file("fh/FlightHelmet_Materials_RubberWoodMat_Normal.png")),
            metallic_roughness: tref(orm.clone()),
            occlusion: tref(orm.clone()),
            ..Default::default()
        };
        let materials = vec![
            material("wall", MaterialTextures::default(), false),
            material("sofa", sofa.clone(), false),
            material("sofa_fringe", sofa.clone(), false),
            material("hose", helmet.clone(), true),
            material("rubber_wood", helmet.clone(), true),
            // Same images, occlusion read differently: a different set.
            material("rubber_wood_plain", helmet, false),
            material(
                "normal_only",
                MaterialTextures {
                    normal: tref(file("x/curtain_normal.png")),
                    ..Default::default()
                },
                true, // no metallic-roughness image: the flag is dropped
            ),
        ];
        let (sets, idx) = scene_texture_sets(&materials);
        assert_eq!(sets.len(), 4);
        assert_eq!(
            idx,
            vec![None, Some(0), Some(0), Some(1), Some(1), Some(2), Some(3)]
        );
        assert!(!sets[3].occlusion_from_arm);
        let names: Vec<_> = sets.iter().map(TextureSetDesc::name).collect();
        assert_eq!(
            names,
            vec![
                "sofa_03",
                "FlightHelmet_Materials_RubberWoodMat",
                "FlightHelmet_Materials_RubberWoodMat",
                "curtain"
            ]
        );
    }

    #[test]
    fn set_names_strip_suffixes() {
        for (stem, name) in [
            ("wood_table_worn_diff_1k", "wood_table_worn"),
            ("MASTER_Awning_Beams_basecolor", "MASTER_Awning_Beams"),
            (
                "FlightHelmet_Materials_LensesMat_BaseColor",
                "FlightHelmet_Materials_LensesMat",
            ),
            ("curtain_diffuse", "curtain"),
            ("asphalt_02_nor_gl_1k", "asphalt_02"),
            ("tea_set_01_arm_2K", "tea_set_01"),
            ("diffuse", "diffuse"),
            ("_diff", "_diff"),
            ("plain", "plain"),
        ] {
            assert_eq!(strip_suffixes(stem), name, "{stem}");
        }
    }

    #[test]
    fn bistro_sets_load_small() {
        let entries = read_manifest(Path::new(BISTRO)).expect("manifest");
        assert_eq!(entries.len(), 36);
        for entry in entries.iter().take(3) {
            let desc = TextureSetDesc::from_material(&entry.material).expect("textured");
            let loaded = desc
                .load(&LoadOptions {
                    allow_missing: false,
                    max_size: Some(32),
                })
                .expect("load");
            assert!(loaded.missing.is_empty());
            let set = &loaded.set;
            assert_eq!(set.present, ChannelMask::BASE_COLOR | ChannelMask::NORMAL);
            assert_eq!((set.width, set.height), (32, 32));
            assert_eq!(set.mips.len(), 6);
            assert_eq!((set.mips[5].width, set.mips[5].height), (1, 1));
            let mip0 = &set.mips[0];
            assert_eq!(mip0.texels.len(), 32 * 32 * CHANNELS);
            // Absent channels hold neutral values.
            for t in mip0.texels.chunks_exact(CHANNELS) {
                assert_eq!(&t[6..], &[255; 6], "{}", set.name);
                assert_eq!(t[3], 255);
            }
            let (mut sx, mut sy) = (0.0, 0.0);
            for t in mip0.texels.chunks_exact(CHANNELS) {
                sx += t[4] as f64 / 255.0 * 2.0 - 1.0;
                sy += t[5] as f64 / 255.0 * 2.0 - 1.0;
            }
            let n = (32 * 32) as f64;
            assert!(
                (sx / n).abs() < 0.15 && (sy / n).abs() < 0.15,
                "{}: mean normal ({}, {})",
                set.name,
                sx / n,
                sy / n
            );
            assert_eq!(mip0.group(1).len(), 32 * 32 * 4);
            assert!(mip0.group(3).is_empty());
        }
    }

    #[test]
    fn missing_image_is_an_error_or_recorded() {
        let bistro_normal =
            "../shared/assets/bistro_texture_sets/fabric/MASTER_Awning_Beams_normal.png";
        let desc = TextureSetDesc {
            base_color: Some(file("../shared/assets/nowhere/ghost_basecolor.jpg")),
            normal: Some(file(bistro_normal)),
            metallic_roughness: None,
            occlusion: None,
            emissive: None,
            occlusion_from_arm: false,
        };
        let err = desc
            .load(&LoadOptions {
                allow_missing: false,
                max_size: Some(8),
            })
            .unwrap_err();
        assert!(matches!(err, TextureError::Missing { .. }), "{err}");
        assert!(err.to_string().contains("ghost_basecolor.jpg"), "{err}");

        let loaded = desc
            .load(&LoadOptions {
                allow_missing: true,
                max_size: Some(8),
            })
            .expect("load with allow_missing");
        assert_eq!(loaded.missing.len(), 1);
        assert!(loaded.missing[0].contains("ghost_basecolor.jpg"));
        assert!(loaded.missing[0].starts_with("base_color"));
        assert_eq!(loaded.set.present, ChannelMask::NORMAL);
        assert_eq!(loaded.set.name, "ghost");
        assert_eq!((loaded.set.width, loaded.set.height), (8, 8));
    }

    #[test]
    fn channels_route_and_sizes_resample_to_largest() {
        let base = embedded(
            "base.png",
            DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
                4,
                4,
                image::Rgba([10, 20, 30, 40]),
            )),
        );
        let normal = embedded(
            "normal.png",
            DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
                8,
                2,
                image::Rgb([100, 150, 255]),
            )),
        );
        // Grayscale roughness map: reads as R = G = B.
        let rough = embedded(
            "rough.png",
            DynamicImage::ImageLuma8(image::GrayImage::from_pixel(2, 2, image::Luma([77]))),
        );
        let emissive = embedded(
            "emit.png",
            DynamicImage::ImageRgb8(image::RgbImage::from_pixel(1, 1, image::Rgb([5, 6, 7]))),
        );
        let mut desc = TextureSetDesc {
            base_color: Some(base),
            normal: Some(normal),
            metallic_roughness: Some(rough),
            occlusion: None,
            emissive: Some(emissive),
            occlusion_from_arm: true,
        };
        let set = desc.load(&LoadOptions::default()).expect("load").set;
        assert_eq!((set.width, set.height), (8, 4));
        assert_eq!(set.present, ChannelMask::ALL);
        for t in set.mips[0].texels.chunks_exact(CHANNELS) {
            assert_eq!(t, [10, 20, 30, 40, 100, 150, 77, 77, 77, 5, 6, 7]);
        }
        // Without ARM packing, occlusion stays neutral and absent.
        desc.occlusion_from_arm = false;
        let set = desc.load(&LoadOptions::default()).expect("load").set;
        assert!(!set.present.contains(ChannelMask::OCCLUSION));
        assert_eq!(set.mips[0].texel(7, 3).expect("texel")[6], 255);
        assert_eq!(set.mips[0].texel(8, 0), None);
        assert_eq!(
            set.mips[0].group(0)[..4],
            [10, 20, 30, 40],
            "group 0 is base colour + alpha"
        );
    }

    #[test]
    fn neutral_set_is_flat_and_absent() {
        let set = TextureSet::neutral();
        assert_eq!(set.present, ChannelMask::NONE);
        assert_eq!(set.mips.len(), 1);
        assert_eq!(
            set.mips[0].texels,
            [255, 255, 255, 255, 128, 128, 255, 255, 255, 255, 255, 255]
        );
        assert_eq!(set.mips[0].group(1), [128, 128, 255, 255]);
    }

    #[test]
    fn tent_weights_are_normalised() {
        for (n, m) in [(1, 1), (1, 5), (4, 8), (1024, 32), (7, 3), (3, 7)] {
            let w = axis_weights(n, m);
            assert_eq!(w.len(), m);
            for taps in &w {
                let s: f32 = taps.iter().map(|(_, w)| w).sum();
                assert!((s - 1.0).abs() < 1e-5);
                assert!(taps.iter().all(|&(i, _)| i < n));
            }
        }
    }
}
