//! The partial folder of a run, `<out>.partial/`: its marker and manifest
//! ([`PartialManifest`]: every input file's identity, every decoded set's digest and the
//! settings' hash), when it may be resumed or deleted, and the seals of finished groups.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{CompressError, CompressOptions, group_main_steps};
use crate::texture::{CHANNELS, TextureSet};

/// The partial folder of a run writing `out`.
pub fn partial_dir(out: &Path) -> PathBuf {
    let mut name = out
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".partial");
    out.with_file_name(name)
}

/// The marker and manifest file of a partial folder.
pub const PARTIAL_MANIFEST: &str = "neurotex-partial.json";

/// `format` of a [`PartialManifest`].
const PARTIAL_FORMAT: &str = "neurotex-compress-partial";

/// One input file as a partial folder's manifest records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIdentity {
    /// The path as given.
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch (0 when unknown).
    pub modified_ns: u64,
    /// BLAKE3 of the content, hex.
    pub blake3: String,
}

impl FileIdentity {
    /// Read `path`'s identity.
    pub fn of(path: &Path) -> Result<Self, std::io::Error> {
        let meta = std::fs::metadata(path)?;
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let mut hasher = blake3::Hasher::new();
        hasher.update_reader(std::fs::File::open(path)?)?;
        Ok(Self {
            path: path.to_path_buf(),
            size: meta.len(),
            modified_ns,
            blake3: hasher.finalize().to_hex().to_string(),
        })
    }
}

/// BLAKE3 (hex) of a decoded set's size, channels and every mip's texels: what training
/// sees of it (its name aside).
pub fn set_digest(set: &TextureSet) -> String {
    let mut h = blake3::Hasher::new();
    h.update(&set.width.to_le_bytes());
    h.update(&set.height.to_le_bytes());
    h.update(&set.present.0.to_le_bytes());
    for mip in &set.mips {
        h.update(&mip.width.to_le_bytes());
        h.update(&mip.height.to_le_bytes());
        h.update(&mip.texels);
    }
    h.finalize().to_hex().to_string()
}

/// What a partial folder was made from (`<out>.partial/neurotex-partial.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialManifest {
    /// Always `neurotex-compress-partial`.
    pub format: String,
    /// Layout version (1).
    pub version: u32,
    /// Every input file.
    pub files: Vec<FileIdentity>,
    /// Per set: its name and the BLAKE3 (hex) of its size, channels and every mip's texels.
    pub sets: Vec<(String, String)>,
    /// BLAKE3 (hex) of the settings: training recipe, steps per set and per group, seed,
    /// groups, constants, rate control, loss weighting (not the training kernels, which
    /// only change speed and rounding).
    pub settings: String,
}

impl PartialManifest {
    /// The manifest of a run.
    pub fn of_run(
        sets: &[TextureSet],
        constants: &[[f32; CHANNELS]],
        groups: &[Vec<usize>],
        opts: &CompressOptions,
    ) -> Result<Self, CompressError> {
        let files = opts
            .input_files
            .iter()
            .map(|p| {
                FileIdentity::of(p).map_err(|source| CompressError::Input {
                    path: p.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sets = sets
            .iter()
            .map(|set| (set.name.clone(), set_digest(set)))
            .collect();
        // The budgets enter both per set and per group, so a resume under another
        // budget rule is refused too.
        let budgets: Vec<u64> = groups
            .iter()
            .map(|g| group_main_steps(opts.steps, g.len()))
            .collect();
        let settings = serde_json::to_vec(&(
            &opts.train,
            opts.steps,
            &budgets,
            opts.seed,
            groups,
            constants,
            opts.rate,
            opts.loss_weights,
        ))
        .map_err(|e| CompressError::Groups(format!("settings: {e}")))?;
        Ok(Self {
            format: PARTIAL_FORMAT.into(),
            version: 1,
            files,
            sets,
            settings: blake3::hash(&settings).to_hex().to_string(),
        })
    }

    /// What differs between `self` (found) and `run` (wanted), in words.
    fn difference(&self, run: &PartialManifest) -> String {
        for want in &run.files {
            match self.files.iter().find(|f| f.path == want.path) {
                None => return format!("{} was not among its inputs", want.path.display()),
                Some(f) if f.size != want.size => {
                    return format!(
                        "{} changed size ({} → {} bytes)",
                        want.path.display(),
                        f.size,
                        want.size
                    );
                }
                Some(f) if f.blake3 != want.blake3 => {
                    return format!("{} changed content", want.path.display());
                }
                Some(f) if f.modified_ns != want.modified_ns => {
                    return format!("{} was modified", want.path.display());
                }
                Some(_) => {}
            }
        }
        if let Some(f) = self
            .files
            .iter()
            .find(|f| !run.files.iter().any(|w| w.path == f.path))
        {
            return format!("it also read {}", f.path.display());
        }
        if self.sets.len() != run.sets.len() {
            return format!(
                "{} texture sets, this run has {}",
                self.sets.len(),
                run.sets.len()
            );
        }
        if let Some((a, b)) = self.sets.iter().zip(&run.sets).find(|(a, b)| a != b) {
            return if a.0 == b.0 {
                format!("the texels of set `{}` differ", a.0)
            } else {
                format!("set `{}` where this run has `{}`", a.0, b.0)
            };
        }
        if self.settings != run.settings {
            return "other settings (recipe, step budgets, seed, groups, rate control, loss \
                    weights or constants)"
                .into();
        }
        format!("format `{}` version {}", self.format, self.version)
    }
}

/// Make `partial` ready for a run with `manifest`: a folder with a matching manifest is
/// kept (`resume`) or emptied; one of another run that holds no progress (only its
/// manifest, as a run that failed before finishing a group leaves it) is replaced; a
/// missing one is created; anything else is an error and stays untouched. Returns
/// whether earlier progress may be reused.
pub(super) fn prepare_partial(
    partial: &Path,
    manifest: &PartialManifest,
    resume: bool,
) -> Result<bool, CompressError> {
    let io = |source| CompressError::Io {
        path: partial.to_path_buf(),
        source,
    };
    let marker = partial.join(PARTIAL_MANIFEST);
    let mut resuming = false;
    if partial.exists() {
        let bytes = match std::fs::read(&marker) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CompressError::PartialNotOurs {
                    partial: partial.to_path_buf(),
                });
            }
            Err(source) => {
                return Err(CompressError::Io {
                    path: marker,
                    source,
                });
            }
        };
        let found: PartialManifest =
            serde_json::from_slice(&bytes).map_err(|e| CompressError::PartialDamaged {
                partial: partial.to_path_buf(),
                reason: e.to_string(),
            })?;
        if found != *manifest && !holds_only_its_marker(partial).map_err(io)? {
            return Err(CompressError::PartialMismatch {
                partial: partial.to_path_buf(),
                difference: found.difference(manifest),
            });
        }
        if resume && found == *manifest {
            resuming = true;
        } else {
            std::fs::remove_dir_all(partial).map_err(io)?;
        }
    }
    if !resuming {
        // Made complete under a temporary name, then renamed: a kill at any moment
        // leaves either no folder or one with its marker.
        let json = serde_json::to_vec_pretty(manifest)
            .map_err(|e| CompressError::Groups(format!("manifest: {e}")))?;
        let mut name = partial.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".{}.tmp", std::process::id()));
        let staging = partial.with_file_name(name);
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging).map_err(io)?;
        crate::io::write_atomic(&staging.join(PARTIAL_MANIFEST), &json).map_err(io)?;
        std::fs::rename(&staging, partial).map_err(io)?;
    }
    Ok(resuming)
}

/// Whether the partial folder holds nothing but its manifest: no progress of any run,
/// so another run may replace it.
fn holds_only_its_marker(partial: &Path) -> std::io::Result<bool> {
    let mut entries = std::fs::read_dir(partial)?;
    Ok(match (entries.next().transpose()?, entries.next()) {
        (Some(only), None) => only.file_name() == PARTIAL_MANIFEST,
        _ => false,
    })
}

/// The seal of finished group `g` of the run whose partial manifest hashes to `owner`:
/// the BLAKE3 of the package bytes keyed with `owner` and `g` (hex). A group package from
/// another run, another group or edited in place does not match it. It guards against
/// mix-ups, not forgery: whoever can read the folder's manifest can compute it.
pub(super) fn group_seal(owner: &[u8; 32], g: usize, package: &[u8]) -> String {
    let mut h = blake3::Hasher::new_keyed(owner);
    h.update(&(g as u64).to_le_bytes());
    h.update(package);
    h.finalize().to_hex().to_string()
}

/// Delete `<out>.partial/` if neurotex made it (it holds the marker), whatever run it
/// belongs to; a folder without the marker is left alone. For owners of an output folder
/// (the package cache) that know the partial progress is stale. Returns whether a folder
/// was deleted.
pub fn remove_partial_if_ours(out: &Path) -> Result<bool, CompressError> {
    let partial = partial_dir(out);
    if !partial.join(PARTIAL_MANIFEST).is_file() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&partial).map_err(|source| CompressError::Io {
        path: partial,
        source,
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntc::compress::{BcnTarget, RateControl};
    use crate::ntc::train::{LossWeighting, TrainConfig};

    /// A one-set run over the file `input`.
    fn run_manifest(input: &Path, steps: u64) -> PartialManifest {
        rate_manifest(input, steps, RateControl::Fixed)
    }

    /// A one-set run over the file `input` under rate control `rate`.
    fn rate_manifest(input: &Path, steps: u64, rate: RateControl) -> PartialManifest {
        let set = TextureSet::neutral();
        let opts = CompressOptions {
            train: TrainConfig::default(),
            steps,
            seed: 1,
            resume: false,
            skip_bcn: false,
            log_every: 100,
            rate,
            kernel: None,
            latent_adam: crate::ntc::train::gpu::LatentAdam::Dense,
            input_files: vec![input.to_path_buf()],
            loss_weights: LossWeighting::Fixed,
            flip: false,
            start_by: None,
        };
        PartialManifest::of_run(&[set], &[[1.0; CHANNELS]], &[vec![0]], &opts).expect("manifest")
    }

    #[test]
    fn partial_folders_are_only_reused_or_deleted_when_they_match() {
        let dir = crate::io::test_dir("partial");
        let input = dir.join("albedo.png");
        std::fs::write(&input, b"first").expect("write");
        let partial = dir.join("out.ntc.partial");
        // A folder made afresh (`false`: nothing to resume) that then holds one finished
        // group, prepared again with `resume`: whether it resumed.
        let fresh_then_again = |resume: bool| {
            std::fs::remove_dir_all(&partial).expect("clean");
            let m = run_manifest(&input, 10);
            assert!(!prepare_partial(&partial, &m, resume).expect("fresh"));
            std::fs::write(partial.join("group0.ntc"), b"done").expect("write");
            prepare_partial(&partial, &m, resume).expect("again")
        };

        // Someone else's folder: refused and left alone.
        std::fs::create_dir_all(&partial).expect("dir");
        std::fs::write(partial.join("precious.txt"), b"keep").expect("write");
        let e = prepare_partial(&partial, &run_manifest(&input, 10), false).unwrap_err();
        assert!(matches!(e, CompressError::PartialNotOurs { .. }), "{e}");
        assert!(partial.join("precious.txt").exists());
        // A damaged marker is reported as damaged, not as missing.
        std::fs::write(
            partial.join(PARTIAL_MANIFEST),
            b"{\"format\": \"neurotex-com",
        )
        .expect("w");
        let e = prepare_partial(&partial, &run_manifest(&input, 10), true).unwrap_err();
        assert!(matches!(e, CompressError::PartialDamaged { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("is damaged") && msg.contains(PARTIAL_MANIFEST),
            "{msg}"
        );
        assert!(partial.join("precious.txt").exists());

        // Ours: created with the marker, resumed when it matches.
        assert!(fresh_then_again(true));
        assert!(partial.join("group0.ntc").exists());

        // Other settings (the steps per set, rate control): refused, untouched.
        let e = prepare_partial(&partial, &run_manifest(&input, 11), false).unwrap_err();
        assert!(e.to_string().contains("other settings"), "{e}");
        for rate in [
            RateControl::TargetPsnr(40.0),
            RateControl::MatchBcn(BcnTarget::Bc1),
        ] {
            let e = prepare_partial(&partial, &rate_manifest(&input, 10, rate), true).unwrap_err();
            assert!(e.to_string().contains("other settings"), "{e}");
        }
        assert!(partial.join("group0.ntc").exists());
        // An input that changed: refused, named, untouched.
        std::fs::write(&input, b"second!").expect("write");
        let e = prepare_partial(&partial, &run_manifest(&input, 10), true).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("albedo.png") && msg.contains("changed size"),
            "{msg}"
        );
        assert!(partial.join("group0.ntc").exists());

        // Matching without resume: emptied for a fresh start.
        assert!(!fresh_then_again(false));
        assert!(!partial.join("group0.ntc").exists());

        // Another run's folder without progress (a run that failed before finishing a
        // group leaves only its manifest): replaced, with or without resume.
        std::fs::write(&input, b"first").expect("write");
        for resume in [false, true] {
            std::fs::remove_dir_all(&partial).expect("clean");
            let first = run_manifest(&input, 10);
            assert!(!prepare_partial(&partial, &first, false).expect("fresh"));
            let other = run_manifest(&input, 12);
            assert!(!prepare_partial(&partial, &other, resume).expect("replaced"));
            // Now the other run's: it resumes that one.
            assert!(prepare_partial(&partial, &other, true).expect("resume"));
            let e = prepare_partial(&partial, &first, true);
            assert!(e.is_ok(), "no progress yet, so replaced again: {e:?}");
        }

        // The cache's clean-up deletes only folders with the marker.
        assert!(remove_partial_if_ours(&dir.join("out.ntc")).expect("ours"));
        std::fs::create_dir_all(&partial).expect("dir");
        assert!(!remove_partial_if_ours(&dir.join("out.ntc")).expect("not ours"));
        assert!(partial.exists());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn partial_dir_sits_next_to_the_output() {
        assert_eq!(
            partial_dir(Path::new("/a/b/room.ntc")),
            Path::new("/a/b/room.ntc.partial")
        );
    }
}
