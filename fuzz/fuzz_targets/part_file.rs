//! Fuzz target: arbitrary bytes as a shard's part file ([`neurotex_fuzz::part_file`]).
#![cfg_attr(fuzzing, no_main)]
neurotex_fuzz::target!(part_file);
