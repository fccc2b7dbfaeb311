//! The NTC model: configuration, latent pyramids and their layout, decoder weights, and
//! the pieces of the decoder's input vector (positional encoding, LOD input,
//! activations) that every implementation — the CPU reference, the WGSL trainer and the
//! decode shader — must compute identically.
//!
//! # Input vector
//!
//! For a texel of colour mip `m` at normalised coordinates `(u, v)` (texel centres,
//! `u = (x + ½) / width_m`), the decoder's input is, in this order:
//!
//! | entries | content |
//! |---|---|
//! | `0 .. F` | the fine grid of mip `m`'s pair, bilinearly sampled (wrap addressing) |
//! | `F .. 2F` | the coarse grid of the pair, sampled the same way |
//! | `2F .. 2F + 4W` | positional encoding, 4 values per wave ([`positional_encoding`]) |
//! | `2F + 4W` | the LOD input ([`lod_input`]) |
//! | rest | zeros, up to [`NtcConfig::input_width`] (a multiple of 16) |
//!
//! The two grids are concatenated, not blended. The decoder is an MLP with
//! [`NtcConfig::hidden`] widths, the chosen [`Activation`] after every hidden layer and a
//! linear output layer of [`OUTPUTS`] = 16 values: outputs 0–11 predict the canonical
//! channels (as `byte / 255`, see [`crate::texture`]), 12–15 are padding (loss weight 0).
//!
//! # Latent pyramid and the mip → grid-pair mapping
//!
//! A material of `W × H` texels with `M` mips owns a pyramid of `G = 2·⌈M/2⌉` grids:
//! grid 0 is `max(1, ⌊W/s⌋) × max(1, ⌊H/s⌋)` for the preset's divisor `s` (3, 4, 5, 6 or 8),
//! and each next grid halves each side (floor, minimum 1). Colour mip `m` reads the pair
//!
//! ```text
//! fine = 2·⌊m/2⌋,   coarse = fine + 1
//! ```
//!
//! so pair `j` (grids `2j`, `2j+1`) serves mips `2j` and `2j+1`, and the pairs are
//! self-similar: the first mip of every pair is `s` times finer than its fine grid and the
//! second `s/2` times, while the coarse grid is always half the fine one. Every grid is
//! read by exactly one pair, so there is no clamping and no grid that no mip reads. (A
//! pair serving 3 mips, as in the Metal write-up, would need the coarse grid of one pair
//! to be the fine grid of the next or leave every third grid unused when the grids halve
//! one step at a time; two mips per pair keeps "coarse = fine + 1" exact.) The `.ntc`
//! package stores the grid shapes and the pair of every mip explicitly, so readers never
//! recompute this mapping.
//!
//! Latent values are stored grid after grid, each grid row-major, each texel's `F`
//! features contiguous: value `f` of texel `(x, y)` of grid `g` is at
//! `grid_offset(g) + (y·width_g + x)·F + f`.

use bytemuck::{Pod, Zeroable};
use serde::{Deserialize, Serialize};

use crate::ntc::quant;
use crate::texture::MAX_IMAGE_SIDE;

/// Number of decoder outputs: the 12 canonical channels padded to 16.
pub const OUTPUTS: usize = 16;

/// Largest number of features per grid texel.
pub const MAX_FEATURES: u32 = 32;

/// Largest number of positional-encoding waves.
pub const MAX_PE_WAVES: u32 = 8;

/// Largest number of hidden layers.
pub const MAX_HIDDEN_LAYERS: usize = 4;

/// Largest hidden-layer width.
pub const MAX_HIDDEN_WIDTH: u32 = 256;

/// Largest number of grids in one latent pyramid.
pub const MAX_GRIDS: usize = 64;

/// Largest number of colour mips of one material.
pub const MAX_MIPS: usize = 32;

/// Latents are initialised uniformly in `±LATENT_INIT_RANGE` (inside the quantisation
/// range \[-1, 1\]).
pub const LATENT_INIT_RANGE: f64 = 0.5;

/// Slope of [`Activation::LeakyRelu`] for negative inputs.
pub const LEAKY_SLOPE: f64 = 0.01;

/// An out-of-range configuration or an inconsistent model part.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// Features per grid texel outside 4..=32 or not a multiple of 4.
    #[error("features per grid texel must be a multiple of 4 in 4..={MAX_FEATURES}, got {0}")]
    Features(u32),
    /// Latent bits other than 2, 4 or 8.
    #[error("latent bits must be 2, 4 or 8, got {0}")]
    LatentBits(u32),
    /// Too many positional-encoding waves.
    #[error("positional-encoding waves must be at most {MAX_PE_WAVES}, got {0}")]
    PeWaves(u32),
    /// No hidden layer or too many.
    #[error("the decoder needs 1..={MAX_HIDDEN_LAYERS} hidden layers, got {0}")]
    HiddenLayers(usize),
    /// A hidden width outside 4..=256 or not a multiple of 4.
    #[error(
        "hidden layer {layer} must be a multiple of 4 in 4..={MAX_HIDDEN_WIDTH} wide, got {width}"
    )]
    HiddenWidth {
        /// 0-based hidden layer index.
        layer: usize,
        /// The width found.
        width: u32,
    },
    /// A latent layout that cannot describe a texture's pyramid.
    #[error("invalid latent layout: {0}")]
    Layout(String),
    /// A model part whose size does not match the configuration or layout.
    #[error("{what}: expected {expected} values, found {found}")]
    Size {
        /// What was measured (`decoder parameters`, `latents of material 2`, ...).
        what: String,
        /// The size the configuration or layout implies.
        expected: usize,
        /// The size given.
        found: usize,
    },
}

/// Quality preset: only the latent grid resolution changes, grid 0 being the source size
/// divided by [`Preset::divisor`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[derive(clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// Grid 0 at source / 8.
    Low,
    /// Grid 0 at source / 6.
    Medium,
    /// Grid 0 at source / 5 (between medium and high: 3.4 bits per texel at 16 features
    /// of 4 bits, against 2.3 and 5.3).
    MediumHigh,
    /// Grid 0 at source / 4 (the default).
    #[default]
    High,
    /// Grid 0 at source / 3.
    VeryHigh,
}

impl Preset {
    /// All presets, lowest quality first.
    pub const ALL: [Preset; 5] = [
        Preset::Low,
        Preset::Medium,
        Preset::MediumHigh,
        Preset::High,
        Preset::VeryHigh,
    ];

    /// The divisor from source size to grid-0 size: 8, 6, 5, 4 or 3.
    pub const fn divisor(self) -> u32 {
        match self {
            Preset::Low => 8,
            Preset::Medium => 6,
            Preset::MediumHigh => 5,
            Preset::High => 4,
            Preset::VeryHigh => 3,
        }
    }

    /// Stable numeric code used by the `.ntc` format (0–3 lowest quality first, then 4
    /// for medium-high, added later).
    pub const fn code(self) -> u32 {
        match self {
            Preset::Low => 0,
            Preset::Medium => 1,
            Preset::High => 2,
            Preset::VeryHigh => 3,
            Preset::MediumHigh => 4,
        }
    }

    /// The preset with format code `code`.
    pub fn from_code(code: u32) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.code() == code)
    }
}

/// Activation after every hidden layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[derive(clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    /// Hard-GELU, the piecewise quadratic of the NTC paper and the Metal write-up:
    /// `x · clamp((x + 1.5) / 3, 0, 1)`, i.e. 0 below −1.5, `x (x + 1.5) / 3` in
    /// \[−1.5, 1.5\] and `x` above 1.5 (the default).
    #[default]
    HardGelu,
    /// Leaky ReLU with slope [`LEAKY_SLOPE`] = 0.01 for negative inputs (the shared-decoder
    /// paper's choice).
    LeakyRelu,
}

impl Activation {
    /// Stable numeric code used by the `.ntc` format.
    pub const fn code(self) -> u32 {
        match self {
            Activation::HardGelu => 0,
            Activation::LeakyRelu => 1,
        }
    }

    /// The activation with format code `code`.
    pub fn from_code(code: u32) -> Option<Activation> {
        [Activation::HardGelu, Activation::LeakyRelu]
            .into_iter()
            .find(|a| a.code() == code)
    }

    /// The activation of `x`.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Activation::HardGelu => x * ((x + 1.5) / 3.0).clamp(0.0, 1.0),
            Activation::LeakyRelu => {
                if x > 0.0 {
                    x
                } else {
                    LEAKY_SLOPE * x
                }
            }
        }
    }

    /// The derivative at `x` (at a kink, the derivative of the piece that [`apply`]
    /// evaluates there).
    ///
    /// [`apply`]: Activation::apply
    pub fn derivative(self, x: f64) -> f64 {
        match self {
            Activation::HardGelu => {
                if x < -1.5 {
                    0.0
                } else if x > 1.5 {
                    1.0
                } else {
                    (2.0 * x + 1.5) / 3.0
                }
            }
            Activation::LeakyRelu => {
                if x > 0.0 {
                    1.0
                } else {
                    LEAKY_SLOPE
                }
            }
        }
    }
}

/// Bits per stored latent value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[derive(Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub enum LatentBits {
    /// 2 bits: 4 levels.
    Two,
    /// 4 bits: 16 levels (the default).
    #[default]
    Four,
    /// 8 bits: 256 levels.
    Eight,
}

impl LatentBits {
    /// The number of bits (2, 4 or 8).
    pub const fn bits(self) -> u32 {
        match self {
            LatentBits::Two => 2,
            LatentBits::Four => 4,
            LatentBits::Eight => 8,
        }
    }
}

impl TryFrom<u32> for LatentBits {
    type Error = ConfigError;
    fn try_from(bits: u32) -> Result<Self, ConfigError> {
        match bits {
            2 => Ok(LatentBits::Two),
            4 => Ok(LatentBits::Four),
            8 => Ok(LatentBits::Eight),
            other => Err(ConfigError::LatentBits(other)),
        }
    }
}

impl From<LatentBits> for u32 {
    fn from(bits: LatentBits) -> u32 {
        bits.bits()
    }
}

/// The model's shape: everything a decoder of a package needs to agree on. Serialised
/// with serde (unknown keys are errors); every field has the default given below.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NtcConfig {
    /// Features per grid texel `F` (default 16; a multiple of 4 in 4..=32).
    pub features: u32,
    /// Bits per stored latent value (default 4).
    pub latent_bits: LatentBits,
    /// Grid resolution preset (default [`Preset::High`], source / 4).
    pub preset: Preset,
    /// Positional-encoding waves `W` (default 3; at most [`MAX_PE_WAVES`]).
    pub pe_waves: u32,
    /// Hidden layer widths (default `[64, 64]`; 1..=4 layers, each a multiple of 4 in
    /// 4..=256).
    pub hidden: Vec<u32>,
    /// Activation after each hidden layer (default [`Activation::HardGelu`]).
    pub activation: Activation,
}

/// The unit tests' small decoder: 4 features per grid texel, one hidden layer of 8.
#[cfg(test)]
impl NtcConfig {
    pub(crate) fn tiny() -> NtcConfig {
        NtcConfig {
            features: 4,
            hidden: vec![8],
            ..NtcConfig::default()
        }
    }
}

impl Default for NtcConfig {
    fn default() -> Self {
        NtcConfig {
            features: 16,
            latent_bits: LatentBits::Four,
            preset: Preset::High,
            pe_waves: 3,
            hidden: vec![64, 64],
            activation: Activation::HardGelu,
        }
    }
}

impl NtcConfig {
    /// Check every value against its allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_features(self.features)?;
        if self.pe_waves > MAX_PE_WAVES {
            return Err(ConfigError::PeWaves(self.pe_waves));
        }
        if self.hidden.is_empty() || self.hidden.len() > MAX_HIDDEN_LAYERS {
            return Err(ConfigError::HiddenLayers(self.hidden.len()));
        }
        for (layer, &width) in self.hidden.iter().enumerate() {
            if !(4..=MAX_HIDDEN_WIDTH).contains(&width) || !width.is_multiple_of(4) {
                return Err(ConfigError::HiddenWidth { layer, width });
            }
        }
        Ok(())
    }

    /// Entries of the input vector that carry data: `2F + 4W + 1`.
    pub fn input_used(&self) -> usize {
        2 * self.features as usize + 4 * self.pe_waves as usize + 1
    }

    /// Width of the input vector: [`input_used`](Self::input_used) rounded up to a
    /// multiple of 16 (48 for the defaults).
    pub fn input_width(&self) -> usize {
        self.input_used().div_ceil(16) * 16
    }

    /// The decoder's layers, input first: `input_width → hidden… → OUTPUTS`.
    pub fn layer_shapes(&self) -> Vec<LayerShape> {
        let mut widths = vec![self.input_width()];
        widths.extend(self.hidden.iter().map(|&w| w as usize));
        widths.push(OUTPUTS);
        widths
            .windows(2)
            .map(|w| LayerShape {
                inputs: w[0],
                outputs: w[1],
            })
            .collect()
    }

    /// Number of decoder parameters (weights and biases of all layers).
    pub fn decoder_param_count(&self) -> usize {
        self.layer_shapes().iter().map(|s| s.param_count()).sum()
    }
}

/// Check a features-per-texel count.
fn validate_features(features: u32) -> Result<(), ConfigError> {
    if (4..=MAX_FEATURES).contains(&features) && features.is_multiple_of(4) {
        Ok(())
    } else {
        Err(ConfigError::Features(features))
    }
}

/// A tiny deterministic random number generator (SplitMix64), so that initialisation and
/// batch sampling are reproducible from a seed on every platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in \[0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform value in \[lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }

    /// A value in `0..n` (0 when `n == 0`), by Lemire's multiply-shift: the high 64 bits
    /// of `next_u64() · n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Size of one latent grid in texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GridShape {
    /// Width in texels (≥ 1).
    pub width: u32,
    /// Height in texels (≥ 1).
    pub height: u32,
}

impl GridShape {
    /// Number of texels.
    pub fn texels(self) -> usize {
        self.width as usize * self.height as usize
    }
}

/// The two grids a colour mip reads (indices into [`LatentLayout::grids`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MipPair {
    /// The finer grid.
    pub fine: u32,
    /// The coarser grid.
    pub coarse: u32,
}

/// A colour mip's grid pair as the GPU kernels read it (WGSL `NtcGridPair` in
/// `shaders/common/ntc_encoding.wgsl`, a field of the decoder's `NtcMip` and the trainer's
/// `MipEntry`): where each grid starts, in the unit of the buffer that holds it, and its
/// size in texels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GridPairGpu {
    /// Start of the fine grid.
    pub fine_offset: u32,
    /// Fine grid width in texels.
    pub fine_width: u32,
    /// Fine grid height in texels.
    pub fine_height: u32,
    /// Start of the coarse grid.
    pub coarse_offset: u32,
    /// Coarse grid width in texels.
    pub coarse_width: u32,
    /// Coarse grid height in texels.
    pub coarse_height: u32,
}

/// The latent pyramid of one material: grid shapes, the grid pair of every colour mip and
/// where each grid's values start. See the module docs for the standard mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatentLayout {
    width: u32,
    height: u32,
    features: u32,
    grids: Vec<GridShape>,
    pairs: Vec<MipPair>,
    /// Value offset of each grid, plus the total at the end.
    offsets: Vec<usize>,
}

/// Number of mips of a full chain from `width × height` down to 1×1.
pub fn full_mip_count(width: u32, height: u32) -> usize {
    (32 - width.max(height).max(1).leading_zeros()) as usize
}

impl LatentLayout {
    /// The standard layout (module docs) for a `width × height` texture with `mips`
    /// colour mips, grid 0 at the preset's resolution, `features` per grid texel.
    pub fn new(
        width: u32,
        height: u32,
        mips: usize,
        preset: Preset,
        features: u32,
    ) -> Result<Self, ConfigError> {
        let chain = full_mip_count(width, height);
        if mips == 0 || mips > chain {
            return Err(ConfigError::Layout(format!(
                "{mips} mips for a {width}×{height} texture (allowed 1..={chain})"
            )));
        }
        let s = preset.divisor();
        let first = GridShape {
            width: (width / s).max(1),
            height: (height / s).max(1),
        };
        let grid_count = 2 * mips.div_ceil(2);
        let grids: Vec<GridShape> = std::iter::successors(Some(first), |g| {
            Some(GridShape {
                width: (g.width / 2).max(1),
                height: (g.height / 2).max(1),
            })
        })
        .take(grid_count)
        .collect();
        let pairs = (0..mips)
            .map(|m| {
                let fine = 2 * (m / 2) as u32;
                MipPair {
                    fine,
                    coarse: fine + 1,
                }
            })
            .collect();
        Self::from_parts(width, height, features, grids, pairs)
    }

    /// A layout from explicit parts, checked: sides in 1..=16384, `features` valid,
    /// 1..=[`MAX_GRIDS`] grids with sides in 1..=16384, one pair per mip with
    /// `1 ≤ mips ≤` the full chain length of `width × height`, pair indices inside the
    /// pyramid, and a total value count that fits in memory arithmetic.
    pub fn from_parts(
        width: u32,
        height: u32,
        features: u32,
        grids: Vec<GridShape>,
        pairs: Vec<MipPair>,
    ) -> Result<Self, ConfigError> {
        let bad = |reason: String| Err(ConfigError::Layout(reason));
        validate_features(features)?;
        let side_ok =
            |w: u32, h: u32| (1..=MAX_IMAGE_SIDE).contains(&w) && (1..=MAX_IMAGE_SIDE).contains(&h);
        if !side_ok(width, height) {
            return bad(format!(
                "texture of {width}×{height} is outside 1..={MAX_IMAGE_SIDE} per side"
            ));
        }
        if grids.is_empty() || grids.len() > MAX_GRIDS {
            return bad(format!("{} grids (allowed 1..={MAX_GRIDS})", grids.len()));
        }
        let chain = full_mip_count(width, height);
        if pairs.is_empty() || pairs.len() > chain {
            return bad(format!(
                "{} mips for a {width}×{height} texture (allowed 1..={chain})",
                pairs.len()
            ));
        }
        if let Some((g, shape)) = grids
            .iter()
            .enumerate()
            .find(|(_, g)| !side_ok(g.width, g.height))
        {
            return bad(format!(
                "grid {g} of {}×{} is outside 1..={MAX_IMAGE_SIDE} per side",
                shape.width, shape.height
            ));
        }
        if let Some((m, pair)) = pairs
            .iter()
            .enumerate()
            .find(|(_, p)| p.fine as usize >= grids.len() || p.coarse as usize >= grids.len())
        {
            return bad(format!(
                "mip {m} reads grids ({}, {}) of a {}-grid pyramid",
                pair.fine,
                pair.coarse,
                grids.len()
            ));
        }
        let mut offsets = Vec::with_capacity(grids.len() + 1);
        let mut total = 0usize;
        for g in &grids {
            offsets.push(total);
            total = g
                .texels()
                .checked_mul(features as usize)
                .and_then(|n| total.checked_add(n))
                .ok_or_else(|| ConfigError::Layout("latent value count overflows".into()))?;
        }
        offsets.push(total);
        Ok(LatentLayout {
            width,
            height,
            features,
            grids,
            pairs,
            offsets,
        })
    }

    /// Width of the texture's mip 0.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height of the texture's mip 0.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Features per grid texel.
    pub fn features(&self) -> u32 {
        self.features
    }

    /// The grids, finest first.
    pub fn grids(&self) -> &[GridShape] {
        &self.grids
    }

    /// The pair of every colour mip, mip 0 first.
    pub fn pairs(&self) -> &[MipPair] {
        &self.pairs
    }

    /// Number of colour mips.
    pub fn mips(&self) -> usize {
        self.pairs.len()
    }

    /// Size of colour mip `mip`: each side halved `mip` times (floor, minimum 1), as
    /// [`crate::texture::build_mip_chain`] builds them.
    pub fn mip_size(&self, mip: usize) -> Option<(u32, u32)> {
        if mip >= self.pairs.len() {
            return None;
        }
        let shift = mip.min(31) as u32;
        Some(((self.width >> shift).max(1), (self.height >> shift).max(1)))
    }

    /// The pair colour mip `mip` reads.
    pub fn pair(&self, mip: usize) -> Option<MipPair> {
        self.pairs.get(mip).copied()
    }

    /// Mip `mip`'s grid pair for the GPU kernels, each grid's start mapped by `offset`
    /// from its [`grid_offset`](Self::grid_offset); `None` when the mip has no pair.
    pub fn gpu_pair<E>(
        &self,
        mip: usize,
        offset: impl Fn(usize) -> Result<u32, E>,
    ) -> Result<Option<GridPairGpu>, E> {
        let Some((pair, fine, coarse)) = self
            .pair(mip)
            .and_then(|p| Some((p, self.grid(p.fine)?, self.grid(p.coarse)?)))
        else {
            return Ok(None);
        };
        let start = |g: u32| offset(self.grid_offset(g).unwrap_or(0));
        Ok(Some(GridPairGpu {
            fine_offset: start(pair.fine)?,
            fine_width: fine.width,
            fine_height: fine.height,
            coarse_offset: start(pair.coarse)?,
            coarse_width: coarse.width,
            coarse_height: coarse.height,
        }))
    }

    /// Shape of grid `g`.
    pub fn grid(&self, g: u32) -> Option<GridShape> {
        self.grids.get(g as usize).copied()
    }

    /// Index of the first value of grid `g` in the flat latent array.
    pub fn grid_offset(&self, g: u32) -> Option<usize> {
        if (g as usize) < self.grids.len() {
            self.offsets.get(g as usize).copied()
        } else {
            None
        }
    }

    /// Total number of latent values (grid texels × features).
    pub fn value_count(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }

    /// Total number of grid texels.
    pub fn texel_count(&self) -> usize {
        self.grids.iter().map(|g| g.texels()).sum()
    }

    /// Number of packed `u32` words of the whole pyramid at `bits` per value (see
    /// [`quant::words_per_texel`]).
    pub fn packed_words(&self, bits: LatentBits) -> usize {
        self.texel_count() * quant::words_per_texel(self.features, bits)
    }

    /// Stored latent bits ÷ texels of mip 0. Every grid texel is stored in whole `u32`
    /// words, so this is `F · bits` per grid texel when `F · bits` is a multiple of 32
    /// (always for the default 16 × 4 bits). The shared decoder is not counted.
    pub fn bits_per_texel(&self, bits: LatentBits) -> f64 {
        self.packed_words(bits) as f64 * 32.0 / (self.width as f64 * self.height as f64)
    }

    /// [`bits_per_texel`](Self::bits_per_texel) ÷ `channels` (e.g. the set's present
    /// channel count, or 12); `channels == 0` counts as 1.
    pub fn bits_per_texel_per_channel(&self, bits: LatentBits, channels: u32) -> f64 {
        self.bits_per_texel(bits) / f64::from(channels.max(1))
    }
}

/// One decoder layer's shape: a row-major `[outputs][inputs]` weight matrix and
/// `outputs` biases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LayerShape {
    /// Input width.
    pub inputs: usize,
    /// Output width.
    pub outputs: usize,
}

impl LayerShape {
    /// Number of weights (`inputs · outputs`).
    pub fn weight_count(self) -> usize {
        self.inputs * self.outputs
    }

    /// Number of weights and biases.
    pub fn param_count(self) -> usize {
        self.weight_count() + self.outputs
    }
}

/// One layer's parameters, borrowed from [`DecoderWeights`].
#[derive(Clone, Copy, Debug)]
pub struct LayerView<'a> {
    /// The layer's shape.
    pub shape: LayerShape,
    /// Offset of the first weight in [`DecoderWeights::params`].
    pub offset: usize,
    /// `weights[o * inputs + i]` connects input `i` to output `o`.
    pub weights: &'a [f32],
    /// One bias per output.
    pub biases: &'a [f32],
}

/// The decoder MLP's parameters in one flat array: for each layer, input layer first, its
/// row-major `[outputs][inputs]` weights and then its biases. This is also the order of
/// the f16 values in a `.ntc` package and of the GPU's weight buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct DecoderWeights {
    layers: Vec<LayerShape>,
    params: Vec<f32>,
}

impl DecoderWeights {
    /// Freshly initialised weights for `config` (which must validate): He-uniform
    /// (`±√(6 / fan_in)`) for layers followed by an activation, Xavier-uniform
    /// (`±√(6 / (fan_in + fan_out))`) for the linear output layer, zero biases. The first
    /// layer's fan-in counts only the used inputs ([`NtcConfig::input_used`]); its weights
    /// from the zero padding are 0.
    pub fn init(config: &NtcConfig, rng: &mut SplitMix64) -> Result<Self, ConfigError> {
        config.validate()?;
        let layers = config.layer_shapes();
        let last = layers.len() - 1;
        let mut params = Vec::with_capacity(config.decoder_param_count());
        for (l, shape) in layers.iter().enumerate() {
            let used = if l == 0 {
                config.input_used()
            } else {
                shape.inputs
            };
            let limit = if l == last {
                (6.0 / (used + shape.outputs) as f64).sqrt()
            } else {
                (6.0 / used as f64).sqrt()
            };
            for _ in 0..shape.outputs {
                for i in 0..shape.inputs {
                    let w = if i < used {
                        rng.uniform(-limit, limit)
                    } else {
                        0.0
                    };
                    params.push(w as f32);
                }
            }
            params.extend(std::iter::repeat_n(0.0f32, shape.outputs));
        }
        Ok(DecoderWeights { layers, params })
    }

    /// Weights from a flat parameter array in the documented order, checked against the
    /// shape `config` implies.
    pub fn from_params(config: &NtcConfig, params: Vec<f32>) -> Result<Self, ConfigError> {
        config.validate()?;
        let expected = config.decoder_param_count();
        if params.len() != expected {
            return Err(ConfigError::Size {
                what: "decoder parameters".into(),
                expected,
                found: params.len(),
            });
        }
        Ok(DecoderWeights {
            layers: config.layer_shapes(),
            params,
        })
    }

    /// The layer shapes, input layer first.
    pub fn layers(&self) -> &[LayerShape] {
        &self.layers
    }

    /// All parameters in the documented order.
    pub fn params(&self) -> &[f32] {
        &self.params
    }

    /// All parameters, mutable (the length is fixed).
    pub fn params_mut(&mut self) -> &mut [f32] {
        &mut self.params
    }

    /// The layers' parameters, input layer first.
    pub fn layer_views(&self) -> impl Iterator<Item = LayerView<'_>> {
        self.layers
            .iter()
            .scan((0usize, &self.params[..]), |(offset, rest), &shape| {
                let (weights, r) = rest.split_at_checked(shape.weight_count())?;
                let (biases, r) = r.split_at_checked(shape.outputs)?;
                let view = LayerView {
                    shape,
                    offset: *offset,
                    weights,
                    biases,
                };
                *offset += shape.param_count();
                *rest = r;
                Some(view)
            })
    }
}

/// The latents of one material: a [`LatentLayout`] and its flat values.
#[derive(Clone, Debug, PartialEq)]
pub struct LatentPyramid {
    layout: LatentLayout,
    values: Vec<f32>,
}

impl LatentPyramid {
    /// A pyramid from values in the layout's order, checked for length.
    pub fn new(layout: LatentLayout, values: Vec<f32>) -> Result<Self, ConfigError> {
        if values.len() != layout.value_count() {
            return Err(ConfigError::Size {
                what: "latent values".into(),
                expected: layout.value_count(),
                found: values.len(),
            });
        }
        Ok(LatentPyramid { layout, values })
    }

    /// A pyramid of values drawn uniformly in `±LATENT_INIT_RANGE`.
    pub fn init(layout: LatentLayout, rng: &mut SplitMix64) -> Self {
        let values = (0..layout.value_count())
            .map(|_| rng.uniform(-LATENT_INIT_RANGE, LATENT_INIT_RANGE) as f32)
            .collect();
        LatentPyramid { layout, values }
    }

    /// The layout.
    pub fn layout(&self) -> &LatentLayout {
        &self.layout
    }

    /// The values in layout order.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// The values, mutable (the length is fixed).
    pub fn values_mut(&mut self) -> &mut [f32] {
        &mut self.values
    }
}

/// The model of one *group*: `k` materials (texture sets) sharing one decoder, so `k`
/// latent pyramids and one [`DecoderWeights`]. `k = 1` is the classic per-material NTC.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupModel {
    config: NtcConfig,
    decoder: DecoderWeights,
    pyramids: Vec<LatentPyramid>,
}

impl GroupModel {
    /// A freshly initialised model: the decoder first, then each pyramid in order, all
    /// from one [`SplitMix64`] seeded with `seed`.
    pub fn init(
        config: &NtcConfig,
        layouts: Vec<LatentLayout>,
        seed: u64,
    ) -> Result<Self, ConfigError> {
        let mut rng = SplitMix64::new(seed);
        let decoder = DecoderWeights::init(config, &mut rng)?;
        let pyramids = layouts
            .into_iter()
            .map(|layout| LatentPyramid::init(layout, &mut rng))
            .collect();
        Self::from_parts(config.clone(), decoder, pyramids)
    }

    /// A model from parts, checked: the config validates, the decoder has its shape and
    /// every pyramid has `config.features` features per texel.
    pub fn from_parts(
        config: NtcConfig,
        decoder: DecoderWeights,
        pyramids: Vec<LatentPyramid>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        if decoder.layers != config.layer_shapes() {
            return Err(ConfigError::Size {
                what: "decoder parameters".into(),
                expected: config.decoder_param_count(),
                found: decoder.params.len(),
            });
        }
        if let Some((i, p)) = pyramids
            .iter()
            .enumerate()
            .find(|(_, p)| p.layout.features != config.features)
        {
            return Err(ConfigError::Layout(format!(
                "material {i} has {} features per texel, the config {}",
                p.layout.features, config.features
            )));
        }
        Ok(GroupModel {
            config,
            decoder,
            pyramids,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &NtcConfig {
        &self.config
    }

    /// The shared decoder.
    pub fn decoder(&self) -> &DecoderWeights {
        &self.decoder
    }

    /// The shared decoder, mutable.
    pub fn decoder_mut(&mut self) -> &mut DecoderWeights {
        &mut self.decoder
    }

    /// The latent pyramids, one per material.
    pub fn pyramids(&self) -> &[LatentPyramid] {
        &self.pyramids
    }

    /// The latent pyramids, mutable.
    pub fn pyramids_mut(&mut self) -> &mut [LatentPyramid] {
        &mut self.pyramids
    }
}

/// The triangle wave `|4·frac(t) − 2| − 1`: period 1, range \[−1, 1\], continuous (a
/// saw-tooth `2·frac(t) − 1` would put a seam at every period boundary); 1 at `t = 0`.
pub fn triangle_wave(t: f64) -> f64 {
    (4.0 * (t - t.floor()) - 2.0).abs() - 1.0
}

/// The positional encoding of normalised coordinates `(u, v)` for a mip whose pair has
/// coarse grid `coarse`: for wave `w` in `0..waves`, with `px = u · coarse.width · 2^w`
/// and `py = v · coarse.height · 2^w`, the four values
/// `tri(px), tri(py), tri(px + ¼), tri(py + ¼)` ([`triangle_wave`]; the ¼ offset makes
/// each pair a quadrature pair like sin/cos). Wave 0 has one period per coarse texel,
/// so the encoding varies inside the block of output texels one coarse texel covers,
/// which the bilinearly sampled grids cannot.
pub fn positional_encoding(waves: u32, coarse: GridShape, u: f64, v: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(4 * waves as usize);
    for w in 0..waves {
        let scale = f64::from(1u32 << w.min(31));
        let px = u * f64::from(coarse.width) * scale;
        let py = v * f64::from(coarse.height) * scale;
        out.extend([
            triangle_wave(px),
            triangle_wave(py),
            triangle_wave(px + 0.25),
            triangle_wave(py + 0.25),
        ]);
    }
    out
}

/// The LOD input of colour mip `mip` of `mips`: `2 · mip / max(mips − 1, 1) − 1`, i.e.
/// −1 for mip 0 and 1 for the last mip. It is the only input that differs between the
/// mips of one grid pair.
pub fn lod_input(mip: usize, mips: usize) -> f64 {
    2.0 * mip as f64 / mips.saturating_sub(1).max(1) as f64 - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid_and_48_wide() {
        let c = NtcConfig::default();
        c.validate().expect("valid");
        assert_eq!(c.input_used(), 45);
        assert_eq!(c.input_width(), 48);
        let shapes = c.layer_shapes();
        assert_eq!(
            shapes,
            vec![
                LayerShape {
                    inputs: 48,
                    outputs: 64
                },
                LayerShape {
                    inputs: 64,
                    outputs: 64
                },
                LayerShape {
                    inputs: 64,
                    outputs: 16
                },
            ]
        );
        assert_eq!(
            c.decoder_param_count(),
            48 * 64 + 64 + 64 * 64 + 64 + 64 * 16 + 16
        );
    }

    #[test]
    fn config_rejects_out_of_range_values() {
        let base = NtcConfig::default();
        let cases = [
            NtcConfig {
                features: 6,
                ..base.clone()
            },
            NtcConfig {
                features: 36,
                ..base.clone()
            },
            NtcConfig {
                pe_waves: 9,
                ..base.clone()
            },
            NtcConfig {
                hidden: vec![],
                ..base.clone()
            },
            NtcConfig {
                hidden: vec![64, 65],
                ..base.clone()
            },
            NtcConfig {
                hidden: vec![64; 5],
                ..base.clone()
            },
        ];
        for c in cases {
            let err = c.validate().expect_err("invalid");
            assert!(!err.to_string().is_empty());
        }
        let err = NtcConfig {
            hidden: vec![64, 65],
            ..base
        }
        .validate()
        .expect_err("invalid");
        assert_eq!(
            err.to_string(),
            "hidden layer 1 must be a multiple of 4 in 4..=256 wide, got 65"
        );
    }

    #[test]
    fn config_serde_defaults_and_bits() {
        let c: NtcConfig =
            toml::from_str("latent_bits = 2\npreset = \"very-high\"").expect("parse");
        assert_eq!(c.latent_bits, LatentBits::Two);
        assert_eq!(c.preset, Preset::VeryHigh);
        assert_eq!(c.features, 16);
        let err = toml::from_str::<NtcConfig>("latent_bits = 3").expect_err("3 bits");
        assert!(
            err.to_string().contains("latent bits must be 2, 4 or 8"),
            "{err}"
        );
        assert!(toml::from_str::<NtcConfig>("colour = 1").is_err());
        let back: NtcConfig = toml::from_str(&toml::to_string(&c).expect("ser")).expect("de");
        assert_eq!(back, c);
    }

    #[test]
    fn activations_match_their_definitions() {
        let a = Activation::HardGelu;
        assert_eq!(a.apply(-2.0), 0.0);
        assert_eq!(a.apply(2.0), 2.0);
        assert!((a.apply(0.5) - 0.5 * 2.0 / 3.0).abs() < 1e-15);
        assert_eq!(a.apply(0.0), 0.0);
        let l = Activation::LeakyRelu;
        assert_eq!(l.apply(-2.0), -0.02);
        assert_eq!(l.apply(3.0), 3.0);
        for act in [a, l] {
            for x in [-2.0, -1.0, -0.3, 0.4, 1.2, 2.5] {
                let h = 1e-6;
                let fd = (act.apply(x + h) - act.apply(x - h)) / (2.0 * h);
                assert!((fd - act.derivative(x)).abs() < 1e-6, "{act:?} at {x}");
            }
        }
    }

    #[test]
    fn layout_pairs_and_sizes() {
        let l = LatentLayout::new(2048, 2048, 12, Preset::High, 16).expect("layout");
        let sides: Vec<u32> = l.grids().iter().map(|g| g.width).collect();
        assert_eq!(sides, [512, 256, 128, 64, 32, 16, 8, 4, 2, 1, 1, 1]);
        for m in 0..12 {
            let p = l.pair(m).expect("pair");
            assert_eq!(p.fine as usize, 2 * (m / 2));
            assert_eq!(p.coarse, p.fine + 1);
        }
        // 4 bits × 16 features = 64 bits per grid texel.
        let texels: usize = sides.iter().map(|s| (*s as usize).pow(2)).sum();
        let bpt = l.bits_per_texel(LatentBits::Four);
        assert!((bpt - texels as f64 * 64.0 / 2048.0 / 2048.0).abs() < 1e-12);
        assert!((5.3..5.4).contains(&bpt), "{bpt}");
        assert!((l.bits_per_texel_per_channel(LatentBits::Four, 12) - bpt / 12.0).abs() < 1e-12);
        assert_eq!(l.grid_offset(1), Some(512 * 512 * 16));
        assert_eq!(l.grid_offset(12), None);

        // Odd mip count: the last pair serves one mip; non-square sides halve separately.
        let l = LatentLayout::new(64, 16, 7, Preset::VeryHigh, 8).expect("layout");
        assert_eq!(l.grids().len(), 8);
        assert_eq!(
            l.grid(0),
            Some(GridShape {
                width: 21,
                height: 5
            })
        );
        assert_eq!(
            l.grid(1),
            Some(GridShape {
                width: 10,
                height: 2
            })
        );
        assert_eq!(
            l.grid(3),
            Some(GridShape {
                width: 2,
                height: 1
            })
        );
        assert_eq!(l.pair(6), Some(MipPair { fine: 6, coarse: 7 }));

        // Tiny textures bottom out at 1×1.
        let l = LatentLayout::new(8, 8, 4, Preset::Low, 16).expect("layout");
        assert!(l.grids().iter().all(|g| g.texels() == 1));
    }

    #[test]
    fn layout_rejects_bad_parts() {
        let g = |w, h| GridShape {
            width: w,
            height: h,
        };
        let p = |f, c| MipPair { fine: f, coarse: c };
        assert!(LatentLayout::from_parts(4, 4, 4, vec![g(2, 2)], vec![p(0, 1)]).is_err());
        assert!(LatentLayout::from_parts(4, 4, 4, vec![], vec![]).is_err());
        assert!(LatentLayout::from_parts(4, 4, 4, vec![g(0, 2)], vec![p(0, 0)]).is_err());
        assert!(LatentLayout::from_parts(4, 4, 4, vec![g(1, 1)], vec![p(0, 0); 4]).is_err());
        assert!(LatentLayout::from_parts(0, 4, 4, vec![g(1, 1)], vec![p(0, 0)]).is_err());
        assert!(LatentLayout::from_parts(4, 4, 5, vec![g(1, 1)], vec![p(0, 0)]).is_err());
        assert!(LatentLayout::new(20000, 4, 1, Preset::High, 16).is_err());
        let ok = LatentLayout::from_parts(4, 4, 4, vec![g(3, 3), g(2, 2)], vec![p(0, 1); 3])
            .expect("valid");
        assert_eq!(ok.value_count(), (9 + 4) * 4);
    }

    #[test]
    fn decoder_init_is_deterministic_and_shaped() {
        let c = NtcConfig::tiny();
        let a = DecoderWeights::init(&c, &mut SplitMix64::new(7)).expect("init");
        let b = DecoderWeights::init(&c, &mut SplitMix64::new(7)).expect("init");
        assert_eq!(a, b);
        assert_ne!(
            a,
            DecoderWeights::init(&c, &mut SplitMix64::new(8)).expect("init")
        );
        let views: Vec<_> = a.layer_views().collect();
        assert_eq!(views.len(), 2);
        // input_used = 8 + 12 + 1 = 21, padded to 32.
        assert_eq!(views[0].shape.inputs, 32);
        let limit = (6.0f64 / 21.0).sqrt() as f32;
        for o in 0..8 {
            let row = &views[0].weights[o * 32..(o + 1) * 32];
            assert!(row[..21].iter().all(|w| w.abs() <= limit));
            assert!(row[21..].iter().all(|&w| w == 0.0));
        }
        assert!(views[1].biases.iter().all(|&b| b == 0.0));
        assert_eq!(views[1].offset, 32 * 8 + 8);
        assert!(DecoderWeights::from_params(&c, vec![0.0; 3]).is_err());
    }

    #[test]
    fn rng_is_reproducible_and_in_range() {
        let mut r = SplitMix64::new(1);
        let first: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        let mut r2 = SplitMix64::new(1);
        assert_eq!(first, (0..4).map(|_| r2.next_u64()).collect::<Vec<_>>());
        for _ in 0..1000 {
            assert!(r.below(7) < 7);
            let f = r.next_f64();
            assert!((0.0..1.0).contains(&f));
        }
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn encoding_pieces() {
        assert_eq!(triangle_wave(0.0), 1.0);
        assert_eq!(triangle_wave(0.25), 0.0);
        assert_eq!(triangle_wave(0.5), -1.0);
        assert_eq!(triangle_wave(1.75), 0.0);
        assert_eq!(triangle_wave(-0.5), -1.0);
        let pe = positional_encoding(
            3,
            GridShape {
                width: 2,
                height: 1,
            },
            0.125,
            0.5,
        );
        assert_eq!(pe.len(), 12);
        // Wave 0: px = 0.25, py = 0.5.
        assert_eq!(&pe[..4], &[0.0, -1.0, -1.0, 0.0]);
        assert_eq!(lod_input(0, 4), -1.0);
        assert_eq!(lod_input(3, 4), 1.0);
        assert_eq!(lod_input(0, 1), -1.0);
        assert_eq!(full_mip_count(8, 8), 4);
        assert_eq!(full_mip_count(5, 1), 3);
    }
}
