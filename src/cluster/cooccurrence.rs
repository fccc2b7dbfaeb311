//! The screen co-occurrence record: which texture sets meet in one screen tile, over a
//! set of recorded views of a scene.
//!
//! Owns [`CooccurrenceRecord`] (what a co-occurrence pass produces and the
//! `divergence-aware` strategy consumes), its JSON file (written through a temporary file
//! and a rename, read with a size cap and checked before use), and the CPU reference
//! [`ViewCounts::count`] that defines every number of it. It does not render: the views
//! are recorded by `packages::views` (G-buffers counted by the co-occurrence pass,
//! tested against [`ViewCounts::count`]).
//!
//! # What is recorded
//!
//! Per view, every screen tile (the decode pass's [`TileSize`], partial edge tiles
//! included) has a *signature*: the ascending list of distinct texture sets among its
//! decoded pixels, exactly the per-tile distinct-decoder list of
//! [`crate::screen::divergence::tile_decoders`] under the material → texture-set map.
//! A view stores the histogram of its non-empty signatures (signature → number of
//! tiles); tiles that show no texture set are not stored. From the histograms follow the
//! per-set tile counts (tiles where a set appears), the pairwise counts (tiles where both
//! sets appear) and, for any grouping of the sets, the exact number of distinct decoders
//! of every recorded tile (see `objective`) — which pairs alone cannot give.
//!
//! # Identity
//!
//! A record carries its [`RecordSource`]: the scene (path and a digest of its files), the
//! texture-set names in index order, the tile size, the output size and the views (camera
//! path samples or explicit cameras), so that it can be reused while all of these are
//! unchanged; [`CooccurrenceRecord::check_source`] refuses it, naming the file and the
//! first field that differs, otherwise.
//!
//! # File format
//!
//! Compact JSON, `format` = `neurotex-cooccurrence`, `version` = 1:
//!
//! ```text
//! { "format": "neurotex-cooccurrence", "version": 1,
//!   "source": { "scene": "street/street.toml",
//!               "scene_files": [{"file": "street.gltf", "bytes": 263304, "crc32": 1234}],
//!               "set_names": ["MASTER_Awning", ...], "tile": "8x8", "size": [1920, 1080],
//!               "views": [{"kind": "path-sample", "path": "street-walk", "time": 0.5},
//!                         {"kind": "camera", "name": "door", "position": [..],
//!                          "forward": [..], "yfov": 0.87}] },
//!   "views": [ { "signatures": [ [[3], 2210], [[3, 17], 96], ... ] }, ... ] }
//! ```
//!
//! A signature is `[sets, tiles]`; signatures of a view are sorted by their set lists,
//! each list strictly ascending with indices below the number of sets, each count ≥ 1,
//! and a view's counts add up to at most its number of tiles.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ClusterError;
use crate::screen::divergence::tile_decoders;
use crate::screen::tiles::TileSize;

/// The `format` tag of co-occurrence records.
pub const COOCCURRENCE_FORMAT: &str = "neurotex-cooccurrence";

/// The version of the record layout.
pub const COOCCURRENCE_VERSION: u32 = 1;

/// The largest record file that is read (bytes). The street's two camera paths sampled
/// every 0.5 s at 1920×1080 (58 views, 8×8 tiles) take 0.31 MB; the cap keeps a damaged
/// or foreign file from being parsed into memory.
pub const MAX_RECORD_BYTES: u64 = 256 << 20;

/// Most texture sets a record may name: the pairwise counts ([`CooccurrenceRecord::pair_tiles`])
/// are sized by their square (4096 sets: 128 MiB).
pub const MAX_RECORD_SETS: usize = 4096;

/// One recorded view: where its camera came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ViewSpec {
    /// A sample of a named camera path of the scene.
    PathSample {
        /// The camera path's name.
        path: String,
        /// Seconds from the path's start.
        time: f32,
    },
    /// An explicit camera.
    Camera {
        /// A name for reports.
        name: String,
        /// Eye position (world, metres).
        position: [f32; 3],
        /// Unit forward direction (world).
        forward: [f32; 3],
        /// Vertical field of view in radians.
        yfov: f32,
    },
}

/// Length and CRC-32 of one file of a scene, to notice when the scene changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// The file's name as the scene refers to it.
    pub file: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// CRC-32 (IEEE) of its contents.
    pub crc32: u32,
}

impl FileDigest {
    /// The digest of the file at `path`, recorded under `name` (read in chunks).
    pub fn of(path: &Path, name: &str) -> Result<Self, ClusterError> {
        let io = |source| ClusterError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let mut hasher = crc32fast::Hasher::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut bytes = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            bytes += n as u64;
        }
        Ok(Self {
            file: name.to_string(),
            bytes,
            crc32: hasher.finalize(),
        })
    }
}

/// What a record was made from; a record is reused only while all of it is unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordSource {
    /// The scene as given (description or glTF path).
    pub scene: String,
    /// Digests of the scene's files (description, glTF, buffers), in a fixed order.
    pub scene_files: Vec<FileDigest>,
    /// The texture sets, in index order: signature entry `k` is `set_names[k]`.
    pub set_names: Vec<String>,
    /// The tile shape the signatures were counted over.
    pub tile: TileSize,
    /// Output size in pixels (width, height).
    pub size: [u32; 2],
    /// The views, in the order of [`CooccurrenceRecord::views`].
    pub views: Vec<ViewSpec>,
}

impl RecordSource {
    /// Tiles of one view (`size` over `tile`).
    pub fn tiles_per_view(&self) -> u64 {
        let (w, h) = self.tile.grid((self.size[0], self.size[1]));
        u64::from(w) * u64::from(h)
    }
}

/// The tiles of one view that show exactly the sets `sets`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "(Vec<u32>, u64)", into = "(Vec<u32>, u64)")]
pub struct TileSignature {
    /// The distinct texture sets of the tile's decoded pixels, ascending, non-empty.
    pub sets: Vec<u32>,
    /// Number of tiles with this signature.
    pub tiles: u64,
}

impl From<(Vec<u32>, u64)> for TileSignature {
    fn from((sets, tiles): (Vec<u32>, u64)) -> Self {
        Self { sets, tiles }
    }
}

impl From<TileSignature> for (Vec<u32>, u64) {
    fn from(s: TileSignature) -> Self {
        (s.sets, s.tiles)
    }
}

/// The signature histogram of one view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewCounts {
    /// Non-empty signatures, sorted by their set lists, each with its tile count.
    pub signatures: Vec<TileSignature>,
}

impl ViewCounts {
    /// CPU reference of the co-occurrence count of one view: the signature histogram of a
    /// `size` image of G-buffer material `words` (row-major, top row first) over `tile`,
    /// with `set_of_material` mapping material ids to texture sets (an entry
    /// [`crate::screen::divergence::NO_DECODER`], or an id past the map, marks a material
    /// without a set). The per-tile lists are [`tile_decoders`]' under that map.
    pub fn count(words: &[u32], size: (u32, u32), tile: TileSize, set_of_material: &[u32]) -> Self {
        let mut histogram: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        tile_decoders(words, size, tile, set_of_material, |sets| {
            if !sets.is_empty() {
                *histogram.entry(sets.to_vec()).or_insert(0) += 1;
            }
        });
        Self::from_histogram(histogram)
    }

    /// A view from a histogram of signatures (empty signatures and zero counts dropped).
    pub fn from_histogram(histogram: BTreeMap<Vec<u32>, u64>) -> Self {
        Self {
            signatures: histogram
                .into_iter()
                .filter(|(sets, tiles)| !sets.is_empty() && *tiles > 0)
                .map(|(sets, tiles)| TileSignature { sets, tiles })
                .collect(),
        }
    }

    /// Tiles of the view that show at least one texture set.
    pub fn covered_tiles(&self) -> u64 {
        self.signatures.iter().map(|s| s.tiles).sum()
    }
}

/// Screen co-occurrence of texture sets over recorded views (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CooccurrenceRecord {
    /// Always `neurotex-cooccurrence`.
    pub format: String,
    /// Record layout version (1).
    pub version: u32,
    /// What the record was made from.
    pub source: RecordSource,
    /// One histogram per view of `source.views`, in that order.
    pub views: Vec<ViewCounts>,
}

impl CooccurrenceRecord {
    /// A record of `views` (one per `source.views`), checked as [`Self::read`] checks
    /// files.
    pub fn new(source: RecordSource, views: Vec<ViewCounts>) -> Result<Self, ClusterError> {
        let record = Self {
            format: COOCCURRENCE_FORMAT.into(),
            version: COOCCURRENCE_VERSION,
            source,
            views,
        };
        record
            .problem()
            .map_or(Ok(()), |reason| Err(invalid("<memory>", reason)))?;
        Ok(record)
    }

    /// The first structural problem of the record, if any.
    pub(super) fn problem(&self) -> Option<String> {
        if self.format != COOCCURRENCE_FORMAT {
            return Some(format!(
                "format `{}` is not `{COOCCURRENCE_FORMAT}`",
                self.format
            ));
        }
        if self.version != COOCCURRENCE_VERSION {
            return Some(format!(
                "version {} is not {COOCCURRENCE_VERSION}",
                self.version
            ));
        }
        let src = &self.source;
        let n = src.set_names.len();
        if n == 0 || n > MAX_RECORD_SETS {
            return Some(format!("{n} texture sets (from 1 to {MAX_RECORD_SETS})"));
        }
        for (v, view) in src.views.iter().enumerate() {
            let numbers: Vec<f32> = match view {
                ViewSpec::PathSample { time, .. } => vec![*time],
                ViewSpec::Camera {
                    position,
                    forward,
                    yfov,
                    ..
                } => position
                    .iter()
                    .chain(forward)
                    .chain([yfov])
                    .copied()
                    .collect(),
            };
            if numbers.iter().any(|x| !x.is_finite()) {
                return Some(format!(
                    "view {v}: {view:?} holds a number that is not finite"
                ));
            }
        }
        let mut names: Vec<&str> = src.set_names.iter().map(String::as_str).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Some(format!("texture set `{}` is listed twice", w[0]));
        }
        // The render size check bounds the tiles a view counts (at most 2²³), so the
        // sums over views stay far from overflowing.
        if let Err(e) = crate::scene::description::check_size(src.size[0], src.size[1]) {
            return Some(format!("output size {e}"));
        }
        if self.views.len() != src.views.len() {
            return Some(format!(
                "{} view histograms for {} views",
                self.views.len(),
                src.views.len()
            ));
        }
        let per_view = src.tiles_per_view();
        for (v, view) in self.views.iter().enumerate() {
            let mut total = 0u64;
            for (k, sig) in view.signatures.iter().enumerate() {
                let at = || format!("view {v}, signature {k}");
                if sig.sets.is_empty() || sig.tiles == 0 {
                    return Some(format!("{}: empty signature or zero tiles", at()));
                }
                if sig.sets.len() > src.tile.pixels() as usize {
                    return Some(format!(
                        "{}: {} sets in a tile of {} pixels",
                        at(),
                        sig.sets.len(),
                        src.tile.pixels()
                    ));
                }
                if !sig.sets.windows(2).all(|w| w[0] < w[1]) {
                    return Some(format!("{}: sets {:?} are not ascending", at(), sig.sets));
                }
                if let Some(&s) = sig.sets.iter().find(|&&s| s as usize >= n) {
                    return Some(format!("{}: set index {s} is not below {n}", at()));
                }
                if k > 0 && view.signatures[k - 1].sets >= sig.sets {
                    return Some(format!("{}: signatures are not sorted or repeat", at()));
                }
                total = total.saturating_add(sig.tiles);
            }
            if total > per_view {
                return Some(format!(
                    "view {v}: {total} tiles counted, but a {}×{} view has {per_view} {} tiles",
                    src.size[0], src.size[1], src.tile
                ));
            }
        }
        None
    }

    /// Write the record as compact JSON at `path` (temporary file + rename).
    pub fn write(&self, path: &Path) -> Result<(), ClusterError> {
        let json = serde_json::to_vec(self).map_err(|e| ClusterError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        crate::io::write_atomic(path, &json).map_err(|source| ClusterError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Read and check a record file: at most [`MAX_RECORD_BYTES`], valid JSON of this
    /// layout, every signature well-formed (see the module docs). Errors name the file.
    pub fn read(path: &Path) -> Result<Self, ClusterError> {
        let io = |source| ClusterError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > MAX_RECORD_BYTES {
            return Err(invalid(
                path,
                format!("{len} bytes is more than a record may hold ({MAX_RECORD_BYTES})"),
            ));
        }
        let mut bytes = Vec::with_capacity(len as usize);
        file.take(MAX_RECORD_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        Self::from_slice(&bytes, path)
    }

    /// Parse and check a record read from `path` (named in errors): valid JSON of this
    /// layout, every signature well-formed, at most `MAX_RECORD_SETS` sets.
    pub fn from_slice(bytes: &[u8], path: &Path) -> Result<Self, ClusterError> {
        if bytes.len() as u64 > MAX_RECORD_BYTES {
            return Err(invalid(
                path,
                format!(
                    "{} bytes is more than a record may hold ({MAX_RECORD_BYTES})",
                    bytes.len()
                ),
            ));
        }
        let record: Self = serde_json::from_slice(bytes).map_err(|e| ClusterError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        match record.problem() {
            Some(reason) => Err(invalid(path, reason)),
            None => Ok(record),
        }
    }

    /// Check that the record was made from `expected` (it came from `file`); the error
    /// names the file and the first field that differs, so that the caller records anew.
    pub fn check_source(&self, expected: &RecordSource, file: &Path) -> Result<(), ClusterError> {
        let (have, want) = (&self.source, expected);
        let differs = |what: &str, recorded: String, wanted: String| {
            Err(ClusterError::CooccurrenceMismatch {
                file: file.to_path_buf(),
                what: what.to_string(),
                recorded,
                expected: wanted,
            })
        };
        if have.scene != want.scene {
            return differs("scene", have.scene.clone(), want.scene.clone());
        }
        if have.scene_files != want.scene_files {
            let show = |d: &[FileDigest]| {
                d.iter()
                    .map(|f| format!("{} ({} bytes, crc32 {:08x})", f.file, f.bytes, f.crc32))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return differs(
                "scene files",
                show(&have.scene_files),
                show(&want.scene_files),
            );
        }
        if have.set_names != want.set_names {
            return differs(
                "texture sets",
                have.set_names.join(", "),
                want.set_names.join(", "),
            );
        }
        if have.tile != want.tile {
            return differs("tile size", have.tile.to_string(), want.tile.to_string());
        }
        if have.size != want.size {
            let show = |s: [u32; 2]| format!("{}×{}", s[0], s[1]);
            return differs("output size", show(have.size), show(want.size));
        }
        if have.views != want.views {
            let k = have
                .views
                .iter()
                .zip(&want.views)
                .position(|(a, b)| a != b)
                .unwrap_or(have.views.len().min(want.views.len()));
            let show = |v: &[ViewSpec]| match v.get(k) {
                Some(view) => format!("{} views, view {k} = {view:?}", v.len()),
                None => format!("{} views", v.len()),
            };
            return differs("views", show(&have.views), show(&want.views));
        }
        Ok(())
    }

    /// The signatures of all views pooled (each tile of each view counted once), sorted
    /// by their set lists.
    pub fn pooled(&self) -> Vec<TileSignature> {
        let mut histogram: BTreeMap<&[u32], u64> = BTreeMap::new();
        for sig in self.views.iter().flat_map(|v| &v.signatures) {
            *histogram.entry(&sig.sets).or_insert(0) += sig.tiles;
        }
        histogram
            .into_iter()
            .map(|(sets, tiles)| TileSignature {
                sets: sets.to_vec(),
                tiles,
            })
            .collect()
    }

    /// Tiles, over all views, that show at least one texture set.
    pub fn covered_tiles(&self) -> u64 {
        self.views.iter().map(ViewCounts::covered_tiles).sum()
    }

    /// Per set, the tiles over all views where it appears.
    pub fn set_tiles(&self) -> Vec<u64> {
        let mut counts = vec![0u64; self.source.set_names.len()];
        for sig in self.views.iter().flat_map(|v| &v.signatures) {
            for &s in &sig.sets {
                counts[s as usize] += sig.tiles;
            }
        }
        counts
    }

    /// The pairwise counts: entry `a · n + b` is the number of tiles over all views where
    /// sets `a` and `b` both appear (`n` sets, symmetric; the diagonal is
    /// [`Self::set_tiles`]).
    pub fn pair_tiles(&self) -> Vec<u64> {
        let n = self.source.set_names.len();
        let mut counts = vec![0u64; n * n];
        for sig in self.views.iter().flat_map(|v| &v.signatures) {
            for &a in &sig.sets {
                for &b in &sig.sets {
                    counts[a as usize * n + b as usize] += sig.tiles;
                }
            }
        }
        counts
    }
}

/// An invalid-record error for `file`.
pub(super) fn invalid(file: impl AsRef<Path>, reason: String) -> ClusterError {
    ClusterError::InvalidCooccurrence {
        file: file.as_ref().to_path_buf(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::divergence::{NO_DECODER, NO_MATERIAL};

    /// Materials 0 → set 2, 1 → set 0, 2 → set 2, 3 → no set, 4 → set 1; id 9 is past
    /// the map.
    const MAP: [u32; 5] = [2, 0, 2, NO_DECODER, 1];

    /// A 10×5 image over 8×4 tiles: a 2×2 grid whose right column is 2 pixels wide and
    /// whose bottom row is 1 pixel tall.
    #[rustfmt::skip]
    fn hand_made() -> Vec<u32> {
        const N: u32 = NO_MATERIAL;
        vec![
            // x: 0  1  2  3  4  5  6  7 | 8  9
            0, 0, 1, 1, 4, 4, 4, 4,   3, 3,              // y 0
            0, 2, 1, 1, 4, 4, 4, 4,   9, 3,              // y 1
            0, 0, 0, 0, 0, 4, 4, 4,   3, 3,              // y 2
            0, 0, 0, 0, 4, 4, 4, 4,   3, 3 | 0x8000_0000, // y 3
            N, N, 4, 4, 4, 4, 4, 4,   1, 2 | 0x8000_0000, // y 4
        ]
    }

    fn source(views: usize) -> RecordSource {
        RecordSource {
            scene: "synthetic".into(),
            scene_files: vec![FileDigest {
                file: "scene.gltf".into(),
                bytes: 10,
                crc32: 0xdead_beef,
            }],
            set_names: vec!["a".into(), "b".into(), "c".into()],
            tile: TileSize::T8x4,
            size: [10, 5],
            views: (0..views)
                .map(|k| ViewSpec::PathSample {
                    path: "walk".into(),
                    time: k as f32 * 0.5,
                })
                .collect(),
        }
    }

    fn sig(sets: &[u32], tiles: u64) -> TileSignature {
        TileSignature {
            sets: sets.to_vec(),
            tiles,
        }
    }

    /// The hand-made view and a view of material 4 only.
    fn record() -> CooccurrenceRecord {
        let a = ViewCounts::count(&hand_made(), (10, 5), TileSize::T8x4, &MAP);
        let b = ViewCounts::count(&[4; 50], (10, 5), TileSize::T8x4, &MAP);
        CooccurrenceRecord::new(source(2), vec![a, b]).expect("record")
    }

    #[test]
    fn cpu_count_matches_a_hand_computed_histogram() {
        // Top-left tile: materials 0, 1, 2, 4 → sets {2, 0, 2, 1}. Top-right: material 3
        // (no set) and id 9 (past the map) → nothing, not stored. Bottom-left: two pixels
        // without geometry and material 4 → {1}. Bottom-right: 1 and 2 (bit 31 ignored)
        // → {0, 2}.
        let view = ViewCounts::count(&hand_made(), (10, 5), TileSize::T8x4, &MAP);
        assert_eq!(
            view.signatures,
            vec![sig(&[0, 1, 2], 1), sig(&[0, 2], 1), sig(&[1], 1)]
        );
        assert_eq!(view.covered_tiles(), 3);
        // The lists are the divergence pass's distinct decoders under the same map.
        let counts = crate::screen::divergence::count_tiles(
            &hand_made(),
            (10, 5),
            TileSize::T8x4,
            &MAP,
            &MAP,
        );
        let d: Vec<u32> = counts.iter().map(|c| c.decoders).collect();
        assert_eq!(d, vec![3, 0, 1, 2]);

        let r = record();
        assert_eq!(
            r.pooled(),
            vec![sig(&[0, 1, 2], 1), sig(&[0, 2], 1), sig(&[1], 5)]
        );
        assert_eq!(r.covered_tiles(), 7);
        assert_eq!(r.set_tiles(), vec![2, 6, 2]);
        #[rustfmt::skip]
        assert_eq!(r.pair_tiles(), vec![
            2, 1, 2,
            1, 6, 1,
            2, 1, 2,
        ]);
    }

    #[test]
    fn record_round_trip_and_source_checks() {
        let dir = crate::io::test_dir("cooc-round-trip");
        let path = dir.join("street.cooc.json");
        let r = record();
        r.write(&path).expect("write");
        let back = CooccurrenceRecord::read(&path).expect("read");
        assert_eq!(back, r);
        back.check_source(&source(2), &path).expect("same source");

        let mut other = source(2);
        other.tile = TileSize::T8x8;
        let err = back.check_source(&other, &path).unwrap_err().to_string();
        assert!(
            err.contains("street.cooc.json") && err.contains("tile size"),
            "{err}"
        );
        let mut other = source(2);
        other.views[1] = ViewSpec::PathSample {
            path: "walk".into(),
            time: 0.75,
        };
        let err = back.check_source(&other, &path).unwrap_err().to_string();
        assert!(err.contains("views") && err.contains("view 1"), "{err}");
        let mut other = source(2);
        other.scene_files[0].crc32 ^= 1;
        let err = back.check_source(&other, &path).unwrap_err().to_string();
        assert!(
            err.contains("scene files") && err.contains("scene.gltf"),
            "{err}"
        );

        // A file's digest follows its contents.
        let digest = FileDigest::of(&path, "record").expect("digest");
        assert_eq!(digest.bytes, std::fs::metadata(&path).expect("meta").len());
        assert_eq!(
            digest.crc32,
            crc32fast::hash(&std::fs::read(&path).expect("read"))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn damaged_records_are_refused_with_the_file_name() {
        let dir = crate::io::test_dir("cooc-damaged");
        let path = dir.join("bad.json");
        let text = serde_json::to_string(&record()).expect("json");
        let check = |text: &str, needle: &str| {
            std::fs::write(&path, text).expect("write");
            let err = CooccurrenceRecord::read(&path).unwrap_err().to_string();
            assert!(
                err.contains("bad.json") && err.contains(needle),
                "{needle}: {err}"
            );
        };
        check(&text[..text.len() / 2], "JSON");
        check(&text.replace("[[1],4]", "[[3],5]"), "set index 3");
        check(&text.replace("[[1],4]", "[[1],0]"), "zero tiles");
        check(&text.replace("[[0,2],1]", "[[2,0],1]"), "ascending");
        check(&text.replace("[[1],4]", "[[1],9]"), "4 8x4 tiles");
        check(
            &text.replace("[[0,1,2],1],[[0,2],1]", "[[0,2],1],[[0,1,2],1]"),
            "sorted",
        );
        check(
            &text.replace("neurotex-cooccurrence", "neurotex-plan"),
            "format",
        );
        check(&text.replace("\"b\"", "\"a\""), "listed twice");
        // The output size bounds the tiles of a view: 32 views claiming 2⁵⁹ tiles each
        // of a 4294967295² view would overflow every sum.
        let mut huge = serde_json::to_value(record()).expect("value");
        huge["source"]["size"] = serde_json::json!([u32::MAX, u32::MAX]);
        check(&huge.to_string(), "1..=16384");
        huge["source"]["size"] = serde_json::json!([0, 5]);
        check(&huge.to_string(), "1..=16384");
        let mut two_views = serde_json::to_value(record()).expect("value");
        two_views["views"].as_array_mut().expect("views").pop();
        check(&two_views.to_string(), "1 view histograms for 2 views");
        // The set count sizes the pairwise counts: from 1 to MAX_RECORD_SETS.
        let with_sets = |n: usize| {
            let mut value = serde_json::to_value(record()).expect("value");
            value["source"]["set_names"] = (0..n).map(|i| format!("set{i}")).collect();
            value.to_string()
        };
        check(&with_sets(0), "0 texture sets (from 1 to 4096)");
        check(&with_sets(MAX_RECORD_SETS + 1), "4097 texture sets");
        let most = CooccurrenceRecord::from_slice(with_sets(MAX_RECORD_SETS).as_bytes(), &path)
            .expect("the most sets a record may name");
        assert_eq!(most.set_tiles().len(), MAX_RECORD_SETS);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(matches!(
            CooccurrenceRecord::read(&dir.join("missing.json")),
            Err(ClusterError::Io { .. })
        ));
    }
}
