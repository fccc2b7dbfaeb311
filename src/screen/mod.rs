//! The CPU facts that both clustering and rendering count by: the screen tiles the decode
//! and divergence passes work on ([`tiles`]), the divergence definitions and their CPU
//! reference ([`divergence`]), and the G-buffer's material word ([`material_word`]).
//!
//! Nothing here touches the GPU: the passes in `render` and the co-occurrence record in
//! `cluster` both build on these definitions, so neither has to import the other.

pub mod divergence;
pub mod material_word;
pub mod tiles;
