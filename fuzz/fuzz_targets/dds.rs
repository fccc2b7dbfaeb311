//! Fuzz target: arbitrary bytes as a DDS texture ([`neurotex_fuzz::dds`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(dds);
