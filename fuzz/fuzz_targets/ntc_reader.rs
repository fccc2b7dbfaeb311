//! Fuzz target: arbitrary bytes into the `.ntc` reader ([`neurotex_fuzz::ntc_reader`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(ntc_reader);
