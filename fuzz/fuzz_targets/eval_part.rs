//! Fuzz target: arbitrary bytes as an evaluation shard's part manifest
//! ([`neurotex_fuzz::eval_part`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(eval_part);
