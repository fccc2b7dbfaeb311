//! The output policy every command follows before it writes anything.
//!
//! - An output may not be one of the command's inputs, compared after resolving links
//!   and `..` (so `--out ./scene/../scene/base.png` over an input texture is caught, and
//!   so is a link to it).
//! - An existing file is not replaced unless the user says `--force`.
//! - Derived outputs (a plan's contact sheet `<plan>.png`, a report's `.md` and
//!   `.curves.*` siblings, the files a generator writes into its folder) pass the same
//!   check as the outputs the user named.
//!
//! [`OutputPolicy::check`] is called for every output before the command's first write,
//! so a refused output leaves nothing half done. Writing itself goes through a temporary
//! file and a rename (`write_file_atomic` and friends).

use std::path::{Component, Path, PathBuf};

/// Why an output is refused.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The output is one of the command's inputs.
    #[error("refusing to write {path}: it is one of this command's inputs ({input})")]
    IsInput {
        /// The output as given.
        path: PathBuf,
        /// The input it resolves to.
        input: PathBuf,
    },
    /// The output exists and `--force` was not given.
    #[error("refusing to replace {path}: it exists (pass --force to replace it)")]
    Exists {
        /// The output.
        path: PathBuf,
    },
    /// A folder that a command owns holds one of its inputs.
    #[error(
        "refusing to write into {path}: it holds {input}, one of this command's inputs (choose a folder of its own)"
    )]
    HoldsInput {
        /// The folder.
        path: PathBuf,
        /// The input inside it.
        input: PathBuf,
    },
    /// A file output names a folder, or a folder output names a file.
    #[error("cannot write {path}: {reason}")]
    WrongKind {
        /// The output.
        path: PathBuf,
        /// What is in the way.
        reason: String,
    },
}

/// The inputs of a command and whether existing outputs may be replaced.
#[derive(Clone, Debug, Default)]
pub struct OutputPolicy {
    /// Every input, resolved ([`resolve`]).
    inputs: Vec<(PathBuf, PathBuf)>,
    /// Replace existing files (`--force`).
    pub force: bool,
}

impl OutputPolicy {
    /// A policy protecting the files `inputs`, replacing existing outputs only with
    /// `force`.
    pub fn new<I, P>(inputs: I, force: bool) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let inputs = inputs
            .into_iter()
            .map(|p| (p.as_ref().to_path_buf(), resolve(p.as_ref())))
            .collect();
        Self { inputs, force }
    }

    /// Add more inputs.
    pub fn protect<I, P>(&mut self, inputs: I)
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        self.inputs.extend(
            inputs
                .into_iter()
                .map(|p| (p.as_ref().to_path_buf(), resolve(p.as_ref()))),
        );
    }

    /// The input `path` resolves to, if any.
    fn input_at(&self, path: &Path) -> Option<&Path> {
        let target = resolve(path);
        self.inputs
            .iter()
            .find_map(|(given, resolved)| (target == *resolved).then_some(given.as_path()))
    }

    /// Check a file output: not an input, not a folder, and not existing unless `force`.
    pub fn check(&self, path: &Path) -> Result<(), OutputError> {
        self.check_kept(path)?;
        if !self.force && (path.exists() || path.is_symlink()) {
            return Err(OutputError::Exists {
                path: path.to_path_buf(),
            });
        }
        Ok(())
    }

    /// Check a file output that a resumed run keeps if it exists: not an input and not a
    /// folder.
    pub fn check_kept(&self, path: &Path) -> Result<(), OutputError> {
        if let Some(input) = self.input_at(path) {
            return Err(OutputError::IsInput {
                path: path.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
        if path.is_dir() {
            return Err(OutputError::WrongKind {
                path: path.to_path_buf(),
                reason: "it is a folder".into(),
            });
        }
        Ok(())
    }

    /// Check every file output of `paths`.
    pub fn check_all<'a>(
        &self,
        paths: impl IntoIterator<Item = &'a Path>,
    ) -> Result<(), OutputError> {
        paths.into_iter().try_for_each(|p| self.check(p))
    }

    /// Check a folder the command owns (it writes files of its own choosing there, and
    /// resumes from what it finds): [`check_dir`](Self::check_dir), and no input inside it.
    pub fn check_own_dir(&self, dir: &Path) -> Result<(), OutputError> {
        self.check_dir(dir)?;
        let root = resolve(dir);
        match self.inputs.iter().find(|(_, r)| r.starts_with(&root)) {
            Some((given, _)) => Err(OutputError::HoldsInput {
                path: dir.to_path_buf(),
                input: given.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Check a folder that outputs go into: not an input, not a file.
    /// The files written into it are checked one by one with [`check`](Self::check).
    pub fn check_dir(&self, dir: &Path) -> Result<(), OutputError> {
        if let Some(input) = self.input_at(dir) {
            return Err(OutputError::IsInput {
                path: dir.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
        if dir.exists() && !dir.is_dir() {
            return Err(OutputError::WrongKind {
                path: dir.to_path_buf(),
                reason: "it is a file, not a folder".into(),
            });
        }
        Ok(())
    }
}

/// `path` made absolute with links resolved as far as it exists, and the rest
/// normalised lexically (`.` and `..` removed), so a file that does not exist yet is
/// still placed where it would be written. The empty path (the parent of a bare file
/// name) is the current folder.
pub fn resolve(path: &Path) -> PathBuf {
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => {
                out.push(other);
                if let Ok(p) = std::fs::canonicalize(&out) {
                    out = p;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_never_outputs_and_files_are_not_replaced() {
        let dir = crate::io::test_dir("outputs-policy");
        let input = dir.join("base.png");
        std::fs::write(&input, b"x").expect("write");
        let policy = OutputPolicy::new([&input], false);
        // The input itself, through `..` and through a link.
        let e = policy.check(&input).unwrap_err();
        assert!(matches!(e, OutputError::IsInput { .. }), "{e}");
        let dotted = dir.join("sub/../base.png");
        assert!(matches!(
            policy.check(&dotted),
            Err(OutputError::IsInput { .. })
        ));
        #[cfg(unix)]
        {
            let link = dir.join("link.png");
            std::os::unix::fs::symlink(&input, &link).expect("link");
            assert!(matches!(
                policy.check(&link),
                Err(OutputError::IsInput { .. })
            ));
        }
        // Existing files need --force; new ones pass.
        let other = dir.join("other.png");
        std::fs::write(&other, b"y").expect("write");
        assert!(matches!(
            policy.check(&other),
            Err(OutputError::Exists { .. })
        ));
        assert!(policy.check(&dir.join("new.png")).is_ok());
        let forced = OutputPolicy::new([&input], true);
        assert!(forced.check(&other).is_ok());
        assert!(matches!(
            forced.check(&input),
            Err(OutputError::IsInput { .. })
        ));
        // A folder is not a file output; a file is not a folder output.
        assert!(matches!(
            forced.check(&dir),
            Err(OutputError::WrongKind { .. })
        ));
        assert!(matches!(
            forced.check_dir(&other),
            Err(OutputError::WrongKind { .. })
        ));
        // A folder of the command's own may not hold an input, however it is named.
        assert!(matches!(
            forced.check_own_dir(&dir.join("sub/..")),
            Err(OutputError::HoldsInput { .. })
        ));
        assert!(forced.check_own_dir(&dir.join("sub")).is_ok());
        std::fs::remove_dir_all(&dir).ok();
    }
}
