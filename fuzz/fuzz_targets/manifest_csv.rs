//! Fuzz target: arbitrary bytes as a texture-set manifest ([`neurotex_fuzz::manifest_csv`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(manifest_csv);
