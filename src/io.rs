//! General file output, used by every writer in the crate: [`write_atomic`] (a
//! temporary file beside the target, flushed to disk, then renamed into place) and the
//! errors of writing outputs ([`OutputError`], which name the file); and [`read_file`],
//! the reading of a whole file into an error of the caller's that names it; and
//! [`csv_field`], one field of the CSV files the crate writes.
//!
//! Knows nothing about what it writes; it must not depend on any other module.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors of writing an output. Every variant names the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A folder could not be created.
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Write `bytes` to `path` through a temporary file in the same folder
/// (`.<name>.<pid>.<n>.tmp`, unique per process and call, so concurrent writers never
/// share one), synced to disk and then renamed over `path`: readers see either the old
/// file or the complete new one, also after a crash. On failure the temporary file is
/// removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |tmp| std::fs::File::create(tmp)?.write_all(bytes))
}

/// [`write_atomic`] for writers that take a path: `write` creates the temporary file it
/// is given (a unique name beside `path`), which is then synced and renamed over `path`.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let file_name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has no file name")
    })?;
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".{}.{n}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        write(&tmp)?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&tmp)?
            .sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        // Best effort: the temporary file may not even exist; the first error matters.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// [`write_atomic`] with an error that names `path`.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_atomic(path, bytes).map_err(|source| OutputError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Create the folder `path` and its parents (nothing to do when it exists).
pub fn create_dir(path: &Path) -> Result<(), OutputError> {
    std::fs::create_dir_all(path).map_err(|source| OutputError::CreateDir {
        path: path.to_path_buf(),
        source,
    })
}

/// The bytes of the file at `path`; a failure becomes the caller's error through
/// `error`, given the path and the I/O error, so that the error names the file.
pub fn read_file<E>(
    path: &Path,
    error: impl FnOnce(PathBuf, std::io::Error) -> E,
) -> Result<Vec<u8>, E> {
    std::fs::read(path).map_err(|source| error(path.to_path_buf(), source))
}

/// A fresh, empty folder under the system temp dir for a unit test, unique per process
/// and call (`tag` names it; a stale folder of the same name is removed first).
#[cfg(test)]
pub(crate) fn test_dir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("neurotex-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("test folder");
    dir
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (quotes inside
/// doubled).
pub fn csv_field(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\r\nlines"), "\"two\r\nlines\"");
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = test_dir("io-replace");
        let path = dir.join("a.txt");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new contents").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new contents");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.txt")]);
    }

    #[test]
    fn failures_name_the_file_and_keep_the_old_one() {
        let dir = test_dir("io-fail");
        // A folder in the way: the rename fails, the temporary file is removed.
        let blocked = dir.join("blocked");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("inside"), b"x").unwrap();
        let err = write_output(&blocked, b"data").unwrap_err();
        assert!(err.to_string().starts_with("cannot write "), "{err}");
        assert!(err.to_string().contains("blocked"), "{err}");
        assert!(blocked.is_dir());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary left"
        );
        // A missing parent folder.
        let err = write_output(&dir.join("no/such/file"), b"x").unwrap_err();
        assert!(err.to_string().contains("file"), "{err}");
        // No file name at all.
        assert!(write_atomic(Path::new("/"), b"x").is_err());
        // A folder that cannot be created under a file.
        let err = create_dir(&blocked.join("inside").join("sub")).unwrap_err();
        assert!(err.to_string().starts_with("cannot create "), "{err}");
        create_dir(&dir.join("new/nested")).unwrap();
        assert!(dir.join("new/nested").is_dir());
    }
}
