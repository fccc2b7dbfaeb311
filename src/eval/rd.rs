//! `eval --rd`: the rate–distortion curves of the evaluation's sets beside its study,
//! trained by [`crate::ntc::rd::compress_ladder`] (the code `compress --rd` runs) with one
//! decoder per set and the evaluation's training settings, into `<out>/rd/`.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::{EvalError, EvalInputs, EvalOptions};
use crate::gpu::GpuContext;
use crate::ntc::compress::{CompressError, CompressJob, CompressOptions};
use crate::ntc::parallel::GroupProgress;
use crate::ntc::rd::{RdReport, Rung, RungPoints, compress_ladder};

/// The folder of the curves in an evaluation's out folder.
pub const RD_DIR: &str = "rd";

/// The curve files' stem in [`RD_DIR`]: `curves.rd.json`, `.rd.csv`, `.rd.md`, `.rd.png`
/// ([`RdReport::files`]).
pub fn rd_report_path(out: &Path) -> PathBuf {
    out.join(RD_DIR).join("curves")
}

/// Train every rung of the ladder on `inputs`' sets, one decoder per set, with `opts`'
/// training settings and the BCn baselines, into `out`/[`RD_DIR`]/ (one package per rung,
/// `<rung>.ntc` with its points, and the curve files at [`rd_report_path`]); with `opts`'
/// `resume`, finished rungs are kept. `progress` hears training progress, `on_rung` each
/// finished (or kept) rung.
pub fn rd_curves(
    devices: &[GpuContext],
    inputs: &EvalInputs,
    opts: &EvalOptions,
    out: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&GroupProgress),
    on_rung: &mut dyn FnMut(Rung, &RungPoints, bool),
) -> Result<RdReport, EvalError> {
    let dir = out.join(RD_DIR);
    std::fs::create_dir_all(&dir).map_err(|source| EvalError::Io {
        path: dir.clone(),
        source,
    })?;
    let groups: Vec<Vec<usize>> = (0..inputs.sets.len()).map(|i| vec![i]).collect();
    let options = CompressOptions {
        skip_bcn: false,
        ..opts.compress_options(opts.train.clone())
    };
    let failed = |source: CompressError| EvalError::Compress {
        run: RD_DIR.into(),
        source: Box::new(source),
    };
    let job = CompressJob {
        devices,
        sets: inputs.sets,
        constants: inputs.constants,
        groups: &groups,
        opts: &options,
        inputs: inputs.description,
        out: &dir,
        cancel,
    };
    let package = |rung: Rung| dir.join(format!("{}.ntc", rung.label()));
    let rd = compress_ladder(&job, &package, progress, on_rung).map_err(failed)?;
    rd.write(&rd_report_path(out)).map_err(failed)?;
    Ok(rd)
}
