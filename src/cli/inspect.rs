//! `neurotex inspect`: summarise a `.ntc` package.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::ntc;

use super::read_package;

/// The arguments of `neurotex inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The package.
    package: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Run `neurotex inspect`.
pub fn run(a: InspectArgs) -> Result<()> {
    let package = read_package(&a.package)?;
    let summary = ntc::tools::summarize(&package, &a.package);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{summary}");
    }
    Ok(())
}
