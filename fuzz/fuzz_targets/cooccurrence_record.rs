//! Fuzz target: arbitrary bytes as a screen co-occurrence record
//! ([`neurotex_fuzz::cooccurrence_record`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(cooccurrence_record);
