//! Fuzz target: arbitrary bytes as a cluster plan ([`neurotex_fuzz::plan_json`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(plan_json);
