//! `neurotex decompress`: decode a `.ntc` package back into PNG, DDS or KTX2 textures.

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
    /// Write every mip level, not just mip 0 (PNG; DDS and KTX2 files always hold
    /// every level).
    #[arg(long)]
    mips: bool,
    /// The files: `png`, or `dds` / `ktx2` with every level block-compressed.
    #[arg(long, value_enum, default_value = "png")]
    format: FileFormat,
    /// Block formats of DDS / KTX2 files: `bc1` (base colour BC1, BC3 with alpha; normal
    /// BC5; ORM and emissive BC1) or `bc7` (BC7, normal BC5).
    #[arg(long, value_enum)]
    bc: Option<Bc>,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum FileFormat {
    Png,
    Dds,
    Ktx2,
}

/// `--bc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Bc {
    Bc1,
    Bc7,
}

/// Run `neurotex decompress`.
pub fn run(a: DecompressArgs) -> Result<()> {
    use neurotex::texture::bcn::Baseline;
    use neurotex::texture::containers::ContainerKind;
    let baseline = match a.bc {
        Some(Bc::Bc1) => Baseline::Bc1Bc5,
        Some(Bc::Bc7) | None => Baseline::Bc7Bc5,
    };
    let output = match a.format {
        FileFormat::Png if a.bc.is_some() => {
            anyhow::bail!("--bc chooses the block formats of --format dds or ktx2, not of PNGs")
        }
        FileFormat::Png => ntc::tools::Output::Png { mips: a.mips },
        FileFormat::Dds => ntc::tools::Output::Blocks {
            container: ContainerKind::Dds,
            baseline,
        },
        FileFormat::Ktx2 => ntc::tools::Output::Blocks {
            container: ContainerKind::Ktx2,
            baseline,
        },
    };
    let package = read_package(&a.package)?;
    let files = ntc::tools::decompress(&package, &a.out, output, &output_policy([&a.package]))?;
    let kind = match a.format {
        FileFormat::Png => "PNGs",
        FileFormat::Dds => "DDS files",
        FileFormat::Ktx2 => "KTX2 files",
    };
    println!("wrote {} {kind} into {}", files.len(), a.out.display());
    Ok(())
}
