//! Fuzz target: arbitrary bytes as a training checkpoint ([`neurotex_fuzz::checkpoint`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(checkpoint);
