//! `neurotex merge`: join the part files of every shard of a compression run
//! (`compress --shard I/N`) into the package one run of every group writes.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::ntc::shard::{Part, merge};

use super::output_policy;

/// The arguments of `neurotex merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The part file of every shard (`compress --shard I/N --out <part>`), in any order.
    #[arg(required = true)]
    parts: Vec<PathBuf>,
    /// Output package.
    #[arg(long)]
    out: PathBuf,
}

/// Run `neurotex merge`: every part is read and checked, and the plan checked complete,
/// before the package is written (through a temporary file and a rename).
pub fn run(a: MergeArgs) -> Result<()> {
    output_policy(&a.parts).check(&a.out)?;
    let parts = a
        .parts
        .iter()
        .map(|path| Ok((path.clone(), Part::read(path)?)))
        .collect::<Result<Vec<_>>>()?;
    let package = merge(&parts)?;
    package.write(&a.out)?;
    println!(
        "wrote {}: {} materials, {} decoders from {} parts",
        a.out.display(),
        package.materials.len(),
        package.decoders.len(),
        parts.len()
    );
    Ok(())
}
