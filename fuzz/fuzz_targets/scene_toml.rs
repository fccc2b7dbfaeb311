//! Fuzz target: arbitrary text as a scene description ([`neurotex_fuzz::scene_toml`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(scene_toml);
