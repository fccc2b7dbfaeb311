//! `neurotex decompress`: decode a `.ntc` package back into PNG textures.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::ntc;

use super::{output_policy, read_package};

/// The arguments of `neurotex decompress`.
#[derive(Args, Debug)]
pub struct DecompressArgs {
    /// The package.
    package: PathBuf,
    /// Output folder.
    #[arg(long)]
    out: PathBuf,
    /// Write every mip level, not just mip 0.
    #[arg(long)]
    mips: bool,
}

/// Run `neurotex decompress`.
pub fn run(a: DecompressArgs) -> Result<()> {
    let package = read_package(&a.package)?;
    let files = ntc::tools::decompress(&package, &a.out, a.mips, &output_policy([&a.package]))?;
    println!("wrote {} PNGs into {}", files.len(), a.out.display());
    Ok(())
}
