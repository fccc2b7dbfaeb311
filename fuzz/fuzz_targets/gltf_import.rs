//! Fuzz target: arbitrary bytes as a .gltf or .glb file ([`neurotex_fuzz::gltf_import`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(gltf_import);
