//! The overlay's remembered state: egui's memory (which panels are open and how wide,
//! collapsed sections, combo and window state) saved when the viewer closes and restored
//! when it starts, as `ui.json` in the viewer's folder beside the package and scene
//! cache ([`ui_state_path`]). Scripted runs (`--frames`) neither read nor write it, so
//! their screenshots do not depend on what an earlier session left.
//!
//! A missing file is a first run; an unreadable, oversized or malformed one is logged
//! with its path and ignored (the layout starts from its defaults), never an error that
//! stops the viewer: it holds nothing but the look of the overlay.

use std::path::{Path, PathBuf};

use crate::open::cache_dir;

/// Largest state file read back (egui's memory of a session is a few KiB).
const MAX_STATE_BYTES: u64 = 1 << 20;

/// Where the overlay's state is kept: `viewer/ui.json` in the cache folder
/// ([`cache_dir`]), beside the viewer's other remembered files.
pub fn ui_state_path() -> PathBuf {
    cache_dir().join("viewer").join("ui.json")
}

/// Restore egui's memory into `ctx` from `path`. Returns whether a state was restored;
/// a file that cannot be used is logged (naming it and why) and left alone.
pub fn load_ui_state(ctx: &egui::Context, path: &Path) -> bool {
    let read = || -> Result<Option<egui::Memory>, String> {
        let len = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        if len > MAX_STATE_BYTES {
            return Err(format!(
                "{len} bytes, more than the {MAX_STATE_BYTES} an overlay state takes"
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| e.to_string())
    };
    match read() {
        Ok(Some(memory)) => {
            ctx.memory_mut(|m| *m = memory);
            true
        }
        Ok(None) => false,
        Err(e) => {
            log::warn!(
                "overlay state {}: {e}; starting from the default layout",
                path.display()
            );
            false
        }
    }
}

/// Save egui's memory of `ctx` to `path` (through a temporary file and a rename, the
/// folder made first). A failure is logged, naming the file.
pub fn save_ui_state(ctx: &egui::Context, path: &Path) {
    let bytes = match ctx.memory(serde_json::to_vec) {
        Ok(b) => b,
        Err(e) => {
            log::warn!("overlay state: cannot serialise egui's memory: {e}");
            return;
        }
    };
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::io::write_atomic(path, &bytes));
    if let Err(e) = written {
        log::warn!("overlay state {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        crate::io::test_dir("persist").join(name)
    }

    #[test]
    fn egui_memory_survives_a_save_and_a_load() {
        let path = temp("round_trip.json");
        let ctx = egui::Context::default();
        let id = egui::Id::unique("controls_open");
        ctx.data_mut(|d| d.insert_persisted(id, false));
        save_ui_state(&ctx, &path);

        let fresh = egui::Context::default();
        assert!(load_ui_state(&fresh, &path));
        assert_eq!(fresh.data_mut(|d| d.get_persisted::<bool>(id)), Some(false));
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn missing_malformed_or_huge_files_leave_the_defaults() {
        let ctx = egui::Context::default();
        assert!(!load_ui_state(&ctx, &temp("missing.json")));
        let bad = temp("bad.json");
        std::fs::write(&bad, b"{ not json").unwrap();
        assert!(!load_ui_state(&ctx, &bad));
        let huge = temp("huge.json");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(MAX_STATE_BYTES + 1)
            .unwrap();
        assert!(!load_ui_state(&ctx, &huge));
        for p in [bad, huge] {
            std::fs::remove_file(p).ok();
        }
    }
}
