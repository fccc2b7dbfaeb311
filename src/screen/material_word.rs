//! The G-buffer's material word and the decoder maps' sentinel, as every shader that
//! reads them declares them (`shaders/common/frame.wgsl`, `shaders/divergence.wgsl`,
//! `shaders/common/ntc_decode.wgsl`). `tests/integration/render_types.rs` checks each
//! constant against its WGSL twin.

/// Largest material id the G-buffer's 20-bit id field (and the material depth) can hold.
pub const MAX_MATERIALS: usize = 1 << 20;

/// The G-buffer material word where no geometry was drawn (WGSL `NO_MATERIAL`).
pub const NO_MATERIAL: u32 = u32::MAX;

/// Bits of the material word that hold the material id (WGSL `MATERIAL_ID_MASK`): every
/// id below [`MAX_MATERIALS`].
pub const MATERIAL_ID_MASK: u32 = (MAX_MATERIALS - 1) as u32;

/// The material word's bitangent sign bit, set for a negative sign (WGSL
/// `BITANGENT_NEGATIVE`).
pub const BITANGENT_NEGATIVE: u32 = 0x8000_0000;

/// Decoder of a material that runs none (no texture set in the package, constants only):
/// the decoder maps' entry (WGSL `NO_DECODER` in `shaders/divergence.wgsl`, `NTC_NONE` in
/// `shaders/common/ntc_decode.wgsl`).
pub const NO_DECODER: u32 = u32::MAX;
