//! Fuzz target: arbitrary bytes as a KTX2 texture ([`neurotex_fuzz::ktx2`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(ktx2);
