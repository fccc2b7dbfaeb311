//! Fuzz target: arbitrary bytes as PNG/JPEG images and as a texture set ([`neurotex_fuzz::image_decode`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(image_decode);
