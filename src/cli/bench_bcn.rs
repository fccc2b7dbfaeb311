//! `neurotex bench bcn`: the GPU block encoder against the CPU reference (ISPC) on the
//! channel groups of texture sets, every mip level, as inference on load's
//! `--transcode` encodes them (`neurotex::render::transcode::encoder_quality`).

use anyhow::Result;
use clap::Args;

use neurotex::gpu::GpuContext;
use neurotex::render::passes::ntc_bake::{Transcode, set_formats};
use neurotex::render::transcode::{ErrorSums, encoder_quality};

use super::args::{InputsArg, describe_sources};

/// The arguments of `neurotex bench bcn`.
#[derive(Args, Debug)]
pub struct BcnArgs {
    #[command(flatten)]
    inputs: InputsArg,
    /// The block formats of the groups, as `--transcode` gives them.
    #[arg(long, value_enum, default_value_t = Transcode::Bc7)]
    transcode: Transcode,
}

/// The baked textures' channel groups, in order.
const GROUPS: [&str; 3] = [
    "base colour + alpha",
    "normal XY + occlusion + roughness",
    "metallic + emissive",
];

/// Run `neurotex bench bcn`.
pub fn run(a: BcnArgs) -> Result<()> {
    let sources = a.inputs.sources()?;
    let inputs = neurotex::inputs::InputSets::open(&sources)?;
    let sets = inputs.load_sets(&a.inputs.load_options())?;
    let ctx = GpuContext::headless()?;
    println!("{}", ctx.describe());
    println!(
        "{}: {} set(s), --transcode {}, every mip level; PSNR (8-bit, RGBA) of the GPU encoder and of ISPC",
        describe_sources(&sources),
        sets.len(),
        a.transcode
    );
    let sums = encoder_quality(&ctx, &sets, a.transcode)?;
    let mut pooled = [ErrorSums::default(); 3];
    for (set, groups) in sets.iter().zip(&sums) {
        let formats = set_formats(set.present, Some(a.transcode));
        for (g, s) in groups.iter().enumerate() {
            let Some((format, _)) = formats[g] else {
                continue;
            };
            pooled[g] = pooled[g].merged(*s);
            let q = s.quality(a.transcode);
            println!(
                "  {} ({}x{}) {} [{:?}]: GPU {:.2} dB, ISPC {:.2} dB ({:+.2} dB)",
                set.name,
                set.width,
                set.height,
                GROUPS[g],
                format,
                q.gpu_db,
                q.ispc_db,
                q.gpu_db - q.ispc_db
            );
        }
    }
    let mut all = ErrorSums::default();
    for (g, s) in pooled.iter().enumerate() {
        if s.values == 0 {
            // No set has a channel of this group: nothing was encoded.
            println!("pooled {}: no set has these channels", GROUPS[g]);
            continue;
        }
        all = all.merged(*s);
        let q = s.quality(a.transcode);
        println!(
            "pooled {}: GPU {:.2} dB, ISPC {:.2} dB ({:+.2} dB); BC7 blocks per mode 0–7: GPU {:?}, ISPC {:?}",
            GROUPS[g],
            q.gpu_db,
            q.ispc_db,
            q.gpu_db - q.ispc_db,
            s.gpu_modes,
            s.ispc_modes
        );
    }
    let q = all.quality(a.transcode);
    println!(
        "pooled: GPU {:.2} dB, ISPC {:.2} dB ({:+.2} dB)",
        q.gpu_db,
        q.ispc_db,
        q.gpu_db - q.ispc_db
    );
    Ok(())
}
