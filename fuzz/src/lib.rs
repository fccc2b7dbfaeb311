//! The checks behind neurotex's fuzz targets, one function per parser. Each takes
//! arbitrary bytes; it may reject them with an error, but must never panic (a panic that
//! neurotex catches itself counts too: the panic hook aborts first), never allocate
//! beyond the memory budget, and whatever it accepts must round-trip where the format
//! can be written.
//!
//! [`target!`] makes a fuzz target of a check: under `cargo fuzz` (`--cfg fuzzing`) a
//! libFuzzer entry point, otherwise a program that replays the files and folders given
//! as arguments (default: `fuzz/corpus/<target>/`), which `.ci/run` runs on the stable
//! toolchain.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use neurotex::cluster::{CooccurrenceRecord, Plan};
use neurotex::eval::study_shards::EvalPart;
use neurotex::ntc::NtcPackage;
use neurotex::ntc::format::HEADER_LEN;
use neurotex::ntc::shard::{Part, merge};
use neurotex::ntc::train::checkpoint::Checkpoint;
use neurotex::scene::ImageSource;
use neurotex::scene::description::LoadedDescription;
use neurotex::scene::gltf_import::{self, UriPolicy};
use neurotex::texture::set::{LoadOptions, TextureSetDesc};
use neurotex::texture::{TextureSet, decode, manifest};

#[cfg(fuzzing)]
#[doc(hidden)]
pub use libfuzzer_sys as __libfuzzer;

/// A fuzz target running check `$name` of this crate.
#[macro_export]
macro_rules! target {
    ($name:ident) => {
        #[cfg(fuzzing)]
        $crate::__libfuzzer::fuzz_target!(|data: &[u8]| $crate::$name(data));

        #[cfg(not(fuzzing))]
        fn main() -> std::process::ExitCode {
            $crate::replay(stringify!($name), $crate::$name)
        }
    };
}

/// The input being replayed, for the panic message.
static CURRENT: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// Run `check` on every file named by the command line (folders: every file inside,
/// sorted), default `fuzz/corpus/<name>/`. Any panic aborts with the file's name.
pub fn replay(name: &str, check: fn(&[u8])) -> std::process::ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let roots = if args.is_empty() {
        vec![
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("corpus")
                .join(name),
        ]
    } else {
        args
    };
    let mut files = Vec::new();
    for root in &roots {
        if root.is_dir() {
            let mut inside: Vec<PathBuf> = match std::fs::read_dir(root) {
                Ok(entries) => entries.filter_map(|e| Some(e.ok()?.path())).collect(),
                Err(e) => {
                    eprintln!("{name}: cannot list {}: {e}", root.display());
                    return std::process::ExitCode::FAILURE;
                }
            };
            inside.retain(|p| p.is_file());
            inside.sort();
            files.extend(inside);
        } else {
            files.push(root.clone());
        }
    }
    if files.is_empty() {
        eprintln!("{name}: no inputs in {roots:?}");
        return std::process::ExitCode::FAILURE;
    }
    std::panic::set_hook(Box::new(|info| {
        let file = CURRENT.lock().ok().and_then(|f| f.clone());
        eprintln!(
            "panic while replaying {}: {info}",
            file.map_or("?".into(), |f| f.display().to_string())
        );
        std::process::abort();
    }));
    for file in &files {
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{name}: cannot read {}: {e}", file.display());
                return std::process::ExitCode::FAILURE;
            }
        };
        if let Ok(mut current) = CURRENT.lock() {
            *current = Some(file.clone());
        }
        check(&bytes);
    }
    println!("{name}: replayed {} inputs", files.len());
    std::process::ExitCode::SUCCESS
}

/// A folder that does not exist: external URIs of fuzzed documents resolve into it.
fn nowhere() -> PathBuf {
    PathBuf::from("/nonexistent-neurotex-fuzz")
}

/// Bytes of a section's tag, length and checksum in a package.
const SECTION_HEADER_LEN: usize = 16;

/// Little-endian u64 at `at`, if the bytes are there.
fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// `data` with the header checksum and every complete section's checksum recomputed, so
/// that mutations reach the parsers behind the checksums.
fn package_with_fixed_checksums(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    if out.len() < HEADER_LEN {
        return out;
    }
    let crc = crc32fast::hash(&out[..HEADER_LEN - 4]);
    out[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    let mut pos = HEADER_LEN;
    for _ in 0..4 {
        let Some(len) = u64_at(&out, pos + 4).and_then(|l| usize::try_from(l).ok()) else {
            break;
        };
        let start = pos + SECTION_HEADER_LEN;
        let Some(end) = start.checked_add(len).filter(|&e| e <= out.len()) else {
            break;
        };
        let crc = crc32fast::hash(&out[start..end]);
        out[pos + 12..pos + 16].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
    out
}

/// A package that reads must pass the memory budget check or fail it with an error,
/// write back and read again unchanged.
fn check_package(bytes: &[u8]) {
    if let Ok(package) = NtcPackage::from_bytes(bytes) {
        let _ = package.check_decode_budget(neurotex::texture::budget::limit());
        let written = package
            .to_bytes()
            .expect("a package that was read writes back");
        let again = NtcPackage::from_bytes(&written).expect("a written package reads back");
        assert_eq!(
            again, package,
            "writing and reading back changes the package"
        );
    }
}

/// The `.ntc` reader, as read and with its checksums repaired.
pub fn ntc_reader(data: &[u8]) {
    check_package(data);
    check_package(&package_with_fixed_checksums(data));
}

/// glTF / GLB import: an error or a scene whose indices address its vertices.
pub fn gltf_import(data: &[u8]) {
    let path = nowhere().join("fuzz.gltf");
    if let Ok(scene) = gltf_import::from_slice(data, &path, &UriPolicy::default()) {
        for mesh in &scene.meshes {
            for p in &mesh.primitives {
                assert_eq!(p.indices.len() % 3, 0, "whole triangles");
                assert!(
                    p.indices.iter().all(|&i| (i as usize) < p.vertices.len()),
                    "indices address vertices"
                );
                assert!(p.material < scene.materials.len(), "material exists");
                for v in &p.vertices {
                    assert!(v.position.iter().all(|x| x.is_finite()), "finite positions");
                }
            }
        }
        for i in &scene.instances {
            assert!(i.mesh < scene.meshes.len(), "instance mesh exists");
        }
    }
}

/// Image decoding with the size policy (as a `.png` and as a `.tga`, the one format told
/// by its name), alone and as two slots of one texture set
/// whose sizes may disagree (the first two bytes, little-endian, give the length of the
/// first image; the rest is the second).
pub fn image_decode(data: &[u8]) {
    let embedded = |name: &str, bytes: &[u8]| ImageSource::Embedded {
        name: name.into(),
        bytes: Arc::from(bytes),
    };
    // Told by content (PNG, JPEG, WebP, DDS, KTX2), and TGA (told by the name) too.
    for name in ["fuzz.png", "fuzz.tga"] {
        if let Ok(img) = decode(&embedded(name, data)) {
            let n = img.width as usize * img.height as usize * img.channels as usize;
            let len = match &img.samples {
                neurotex::texture::Samples::U8(v) => v.len(),
                neurotex::texture::Samples::U16(v) => v.len(),
            };
            assert_eq!(len, n, "samples match the size");
        }
    }
    let Some((head, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let (a, b) = rest.split_at(usize::from(u16::from_le_bytes(*head)).min(rest.len()));
    let desc = TextureSetDesc {
        base_color: Some(embedded("a.png", a)),
        normal: None,
        metallic_roughness: Some(embedded("b.png", b)),
        occlusion: None,
        emissive: None,
        occlusion_from_arm: data.first().is_some_and(|b| b & 1 == 1),
    };
    if let Ok(loaded) = desc.load(&LoadOptions::default()) {
        let set = &loaded.set;
        assert_eq!(
            set.mips[0].texels.len(),
            set.width as usize * set.height as usize * neurotex::texture::CHANNELS
        );
    }
}

/// Scene descriptions: an error, or a description whose camera paths sample to finite
/// cameras at any time (NaN and infinities included).
pub fn scene_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(loaded) = LoadedDescription::parse(text, &nowhere().join("fuzz.toml")) else {
        return;
    };
    for p in &loaded.description.camera_paths {
        let d = p.duration();
        for t in [
            0.0,
            d * 0.5,
            d,
            -1.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ] {
            if let Some(c) = p.sample(t) {
                assert!(
                    c.position.is_finite() && c.forward.is_finite() && c.yfov.is_finite(),
                    "path `{}` at {t}: {c:?}",
                    p.name
                );
            }
        }
    }
}

/// Texture-set manifests, and the texture-set report written from what they hold.
pub fn manifest_csv(data: &[u8]) {
    let path = nowhere().join("manifest.csv");
    let Ok(entries) = manifest::parse_manifest(data, &path) else {
        return;
    };
    let mut ids: Vec<&str> = entries.iter().map(|e| e.material.name.as_str()).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "set ids are unique");
    for e in &entries {
        let t = &e.material.textures;
        assert!(
            t.base_color.is_some() || t.normal.is_some(),
            "rows name an image"
        );
    }
}

/// Cluster plans, checked against three small sets.
pub fn plan_json(data: &[u8]) {
    let Ok(plan) = Plan::from_slice(data, &nowhere().join("plan.json")) else {
        return;
    };
    let sets: Vec<TextureSet> = ["a", "b", "c"]
        .iter()
        .map(|n| TextureSet {
            name: (*n).into(),
            ..TextureSet::neutral()
        })
        .collect();
    if plan.validate(&sets).is_ok() {
        let groups = plan
            .group_of_sets(&sets)
            .expect("a valid plan maps every set");
        assert_eq!(groups.len(), sets.len());
        assert!(groups.iter().all(|&g| g < plan.groups.len()));
    }
}

/// `data` with its trailing CRC-32 recomputed, so mutations reach the header and arrays.
fn checkpoint_with_fixed_crc(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    if out.len() >= 4 {
        let body = out.len() - 4;
        let crc = crc32fast::hash(&out[..body]);
        out[body..].copy_from_slice(&crc.to_le_bytes());
    }
    out
}

/// Training checkpoints: an error, or a checkpoint that writes back and reads again to
/// the same bytes (compared as bytes: a stored NaN is a value like any other).
pub fn checkpoint(data: &[u8]) {
    for bytes in [data.to_vec(), checkpoint_with_fixed_crc(data)] {
        if let Ok(c) = Checkpoint::from_bytes(&bytes) {
            let written = c
                .to_bytes()
                .expect("a checkpoint that was read writes back");
            let again = Checkpoint::from_bytes(&written).expect("it reads back");
            let rewritten = again.to_bytes().expect("and writes back again");
            assert!(
                written == rewritten,
                "writing and reading back changes the checkpoint"
            );
        }
    }
}

/// `data` with its last 32 bytes replaced by the BLAKE3 of the rest (a part's checksum),
/// so that mutations reach the checks behind it.
fn part_with_fixed_checksum(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    if out.len() >= 32 {
        let body = out.len() - 32;
        let checksum = blake3::hash(&out[..body]);
        out[body..].copy_from_slice(checksum.as_bytes());
    }
    out
}

/// Shard part files: an error, or a part that writes back to bytes that read back to the
/// same part, and that merges alone without a panic (into a package when it is the only
/// shard of its split, else into a `missing` error).
pub fn part_file(data: &[u8]) {
    for bytes in [data.to_vec(), part_with_fixed_checksum(data)] {
        if let Ok(part) = Part::from_bytes(&bytes) {
            let written = part.to_bytes().expect("a part that was read writes back");
            let again = Part::from_bytes(&written).expect("it reads back");
            assert!(again == part, "writing and reading back changes the part");
            let alone = part.header.shard.count == 1;
            let merged = merge(&[(PathBuf::from("part"), again)]);
            assert_eq!(merged.is_ok(), alone, "{:?}", merged.err());
        }
    }
}

/// Evaluation part manifests (`eval-part.json`): an error, or a part whose shard lies in
/// its split and which writes back to JSON that reads back to the same part. Mutations
/// also reach the checks behind the checksum: the bytes are read once more with it
/// repaired when they parse as a part at all.
pub fn eval_part(data: &[u8]) {
    let mut inputs = vec![data.to_vec()];
    if let Ok(mut part) = serde_json::from_slice::<EvalPart>(data) {
        part.seal();
        inputs.push(part.to_bytes());
    }
    for bytes in inputs {
        if let Ok(part) = EvalPart::from_slice(&bytes) {
            assert!(part.shard.index < part.shard.count, "the shard is in range");
            assert_eq!(
                part.split.len(),
                part.shard.count as usize,
                "one list a shard"
            );
            let again = EvalPart::from_slice(&part.to_bytes()).expect("it reads back");
            assert!(again == part, "writing and reading back changes the part");
        }
    }
}

/// Screen co-occurrence records: an error, or a record whose counts can be taken (pooled,
/// per set, per pair) and which writes back to JSON that reads back to the same record.
pub fn cooccurrence_record(data: &[u8]) {
    let path = nowhere().join("record.json");
    let Ok(record) = CooccurrenceRecord::from_slice(data, &path) else {
        return;
    };
    let n = record.source.set_names.len();
    let pooled = record.pooled();
    assert!(
        pooled
            .iter()
            .all(|s| s.sets.iter().all(|&i| (i as usize) < n))
    );
    assert_eq!(record.set_tiles().len(), n);
    assert_eq!(record.pair_tiles().len(), n * n);
    let _ = record.covered_tiles();
    let written = serde_json::to_vec(&record).expect("a record writes back");
    let again = CooccurrenceRecord::from_slice(&written, &path).expect("it reads back");
    assert!(
        again == record,
        "writing and reading back changes the record"
    );
}

/// A DDS or KTX2 container: an error, or levels whose sizes follow level 0's and whose
/// every level decodes (within the budget) to exactly its texels; the same bytes as an
/// image source decode to level 0.
fn check_container(data: &[u8], name: &str) {
    use neurotex::texture::containers::Container;
    if let Ok(c) = Container::parse(data, name) {
        assert!(c.width >= 1 && c.height >= 1, "sides are positive");
        assert!(!c.levels.is_empty(), "at least one level");
        for level in 0..c.levels.len() {
            let (w, h) = c.level_size(level);
            assert_eq!(
                c.levels[level].len() as u64,
                c.encoding.level_bytes(w, h),
                "level {level} holds its bytes"
            );
            if let Ok(img) = c.decode_level(level, name) {
                let n = w as usize * h as usize * img.channels as usize;
                let len = match &img.samples {
                    neurotex::texture::Samples::U8(v) => v.len(),
                    neurotex::texture::Samples::U16(v) => v.len(),
                };
                assert_eq!((img.width, img.height, len), (w, h, n), "level {level}");
            }
        }
    }
    let source = ImageSource::Embedded {
        name: name.into(),
        bytes: Arc::from(data),
    };
    if let Ok(img) = decode(&source) {
        assert!(img.width >= 1 && img.height >= 1);
    }
}

/// DDS files (refused arrays, cubemaps and volumes included).
pub fn dds(data: &[u8]) {
    check_container(data, "fuzz.dds");
}

/// KTX2 files (refused supercompression, arrays, cubemaps and volumes included).
pub fn ktx2(data: &[u8]) {
    check_container(data, "fuzz.ktx2");
}
