//! Shards of a compression run and their merge: `compress --shard I/N` trains only the
//! groups of shard `I` of a deterministic split of the plan and writes a *part file*;
//! `merge` checks that the parts of all `N` shards are there, once each, from one plan,
//! and joins them into the package that one run of every group writes.
//!
//! # The split
//!
//! [`split_by_weight`]: groups are taken largest first (by their texels, every mip of
//! every member; ties by group index) and each goes to the shard with the fewest texels so
//! far (ties by shard index), the longest-processing-time rule. Within a shard the groups
//! keep plan order. The split depends only on the plan and the sets, so every process of a
//! job array computes the same one.
//!
//! # The plan's identity
//!
//! [`plan_identity`]: BLAKE3 of the content hash of every input file (not its path or
//! time, which differ between the machines of a cluster), every decoded set (name and
//! texels) and the settings hash of the partial folder's manifest (recipe, steps, seed,
//! groups, constants). Parts merge only when their identities are equal.
//!
//! # Part file (version 1, integers little-endian)
//!
//! ```text
//!  0  magic        [u8; 8] = "NTCPART\0"
//!  8  version      u32 = 1
//! 12  header_len   u32 (≤ 16 MiB)
//! 16  header       JSON, header_len bytes: PartHeader (plan identity, shard, shards,
//!                  the whole split, the member count of every group)
//!  …  package      a .ntc package of the shard's groups, decoders in the shard's order
//! end checksum     BLAKE3 of every byte before it, 32 bytes
//! ```
//!
//! Parts are written through a temporary file and a rename; a shard interrupted resumes
//! from its own partial folder (`<part>.partial/`) like `compress`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::compress::{
    CompressError, CompressJob, CompressReport, PartialManifest, check_groups, compress_selected,
    write_file,
};
use super::format::NtcPackage;
use super::parallel::GroupProgress;
use crate::texture::TextureSet;

/// The first eight bytes of every part file.
pub const PART_MAGIC: [u8; 8] = *b"NTCPART\0";

/// The part format version this build reads and writes.
pub const PART_VERSION: u32 = 1;

/// Most shards one run may be split into.
pub const MAX_SHARDS: u32 = 65536;

/// Largest part header (JSON) accepted.
const MAX_HEADER_BYTES: usize = 16 << 20;

/// Bytes of the fixed start (magic, version, header length).
const PREFIX_LEN: usize = 16;

/// Bytes of the checksum at the end.
const CHECKSUM_LEN: usize = 32;

/// The environment variables `--shard auto/N` reads the index from, in this order: a
/// Slurm job array task, a Kubernetes Indexed Job's pod.
pub const INDEX_VARIABLES: [&str; 2] = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"];

/// Errors of shards, part files and merging.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// A `--shard` argument that is not `I/N` or `auto/N`.
    #[error(
        "invalid shard `{arg}`: {reason} (expected I/N with 0 ≤ I < N ≤ {MAX_SHARDS}, or auto/N)"
    )]
    Arg {
        /// The argument.
        arg: String,
        /// What is wrong.
        reason: String,
    },
    /// `auto/N` without an index in the environment.
    #[error(
        "--shard auto/{count} takes the shard index from SLURM_ARRAY_TASK_ID (a Slurm job \
         array) or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), and neither is set"
    )]
    NoIndex {
        /// The shard count.
        count: u32,
    },
    /// `auto/N` with an index variable that is not a shard of `N`.
    #[error(
        "{variable}={value} is not a shard index of auto/{count}: it must be a number from 0 \
         to {} (run the array as 0-{})",
        count - 1,
        count - 1
    )]
    BadIndex {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
        /// The shard count.
        count: u32,
    },
    /// A part file that cannot be read.
    #[error("cannot read part {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A part file that is damaged or not a part file.
    #[error("{} is not a valid part file: {reason}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// No parts were given.
    #[error("no parts to merge")]
    NoParts,
    /// A part of another plan (inputs, settings or groups) than the first part.
    #[error(
        "{} comes from another plan than {} (other inputs, settings or groups): every part \
         must be made by the same compress command with its own --shard",
        path.display(),
        first.display()
    )]
    OtherPlan {
        /// The part.
        path: PathBuf,
        /// The first part.
        first: PathBuf,
    },
    /// A part of a split into another number of shards than the first part's.
    #[error(
        "{} is shard {shard} of {count}, but {} is of a split into {first_count}",
        path.display(),
        first.display()
    )]
    OtherCount {
        /// The part.
        path: PathBuf,
        /// Its shard.
        shard: u32,
        /// Its shard count.
        count: u32,
        /// The first part.
        first: PathBuf,
        /// The first part's shard count.
        first_count: u32,
    },
    /// Two parts of one shard.
    #[error("{} and {} are both shard {shard}/{count}: give each shard's part once", first.display(), path.display())]
    Duplicate {
        /// The earlier part.
        first: PathBuf,
        /// The repeated one.
        path: PathBuf,
        /// The shard.
        shard: u32,
        /// The shard count.
        count: u32,
    },
    /// Shards without a part.
    #[error("missing the part of {}", missing_list(missing, *count))]
    Missing {
        /// The shards without a part and their groups.
        missing: Vec<(u32, Vec<usize>)>,
        /// The shard count.
        count: u32,
    },
    /// Training or writing the part failed.
    #[error(transparent)]
    Compress(#[from] CompressError),
}

/// "shard 1/3 (groups 2, 5) and shard 2/3 (no groups)", at most [`LIST_CAP`] shards
/// and as many groups each ([`capped_list`]).
fn missing_list(missing: &[(u32, Vec<usize>)], count: u32) -> String {
    capped_list(
        missing.iter().map(|(s, groups)| {
            let groups = if groups.is_empty() {
                "no groups".to_string()
            } else {
                format!(
                    "groups {}",
                    capped_list(groups.iter().map(usize::to_string), ", ", "groups")
                )
            };
            format!("shard {s}/{count} ({groups})")
        }),
        " and ",
        "shards",
    )
}

/// Most items an error message lists before it summarises the rest.
pub const LIST_CAP: usize = 8;

/// `items` joined with `separator`, the first [`LIST_CAP`] of them and then
/// "… and N more `<what>`": a message about 65,536 shards stays one short line.
pub fn capped_list(
    items: impl ExactSizeIterator<Item = String>,
    separator: &str,
    what: &str,
) -> String {
    let total = items.len();
    let shown: Vec<String> = items.take(LIST_CAP).collect();
    let mut text = shown.join(separator);
    if total > LIST_CAP {
        text.push_str(&format!(" … and {} more {what}", total - LIST_CAP));
    }
    text
}

/// One shard of a run: `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// The shard, `0..count`.
    pub index: u32,
    /// The number of shards.
    pub count: u32,
}

/// A `--shard` argument: a given index, or one taken from the scheduler's environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardArg {
    /// `I/N`.
    Fixed(Shard),
    /// `auto/N`: the index from [`INDEX_VARIABLES`].
    Auto {
        /// The number of shards.
        count: u32,
    },
}

impl std::str::FromStr for ShardArg {
    type Err = ShardError;

    fn from_str(arg: &str) -> Result<Self, ShardError> {
        let bad = |reason: &str| ShardError::Arg {
            arg: arg.to_string(),
            reason: reason.to_string(),
        };
        let (index, count) = arg.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| bad("the shard count is not a whole number"))?;
        if !(1..=MAX_SHARDS).contains(&count) {
            return Err(bad("the shard count is out of range"));
        }
        let index = index.trim();
        if index == "auto" {
            return Ok(ShardArg::Auto { count });
        }
        let index: u32 = index
            .parse()
            .map_err(|_| bad("the shard index is neither a whole number nor `auto`"))?;
        if index >= count {
            return Err(bad("the shard index must be below the shard count"));
        }
        Ok(ShardArg::Fixed(Shard { index, count }))
    }
}

impl ShardArg {
    /// The shard, with `auto/N`'s index from the first of [`INDEX_VARIABLES`] that `env`
    /// (a variable lookup, `std::env::var` in the binary) has.
    pub fn resolve(self, env: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let count = match self {
            ShardArg::Fixed(shard) => return Ok(shard),
            ShardArg::Auto { count } => count,
        };
        let (variable, value) = INDEX_VARIABLES
            .iter()
            .find_map(|&v| env(v).map(|value| (v, value)))
            .ok_or(ShardError::NoIndex { count })?;
        match value.trim().parse::<u32>() {
            Ok(index) if index < count => Ok(Shard { index, count }),
            _ => Err(ShardError::BadIndex {
                variable,
                value,
                count,
            }),
        }
    }
}

/// Texels of every mip of every member of each group (members out of range count 0).
pub fn group_texels(groups: &[Vec<usize>], sets: &[TextureSet]) -> Vec<u64> {
    groups
        .iter()
        .map(|members| {
            members
                .iter()
                .filter_map(|&s| sets.get(s))
                .flat_map(|set| &set.mips)
                .map(|mip| u64::from(mip.width) * u64::from(mip.height))
                .sum()
        })
        .collect()
}

/// Split items of `weights` into `shards` lists (see the module docs): largest first onto
/// the lightest shard, ties by index; each list ascending.
pub fn split_by_weight(weights: &[u64], shards: u32) -> Vec<Vec<usize>> {
    let shards = shards.max(1) as usize;
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].cmp(&weights[a]).then(a.cmp(&b)));
    let mut load = vec![0u64; shards];
    let mut split = vec![Vec::new(); shards];
    for item in order {
        let lightest = (0..shards)
            .min_by_key(|&s| (load[s], s))
            .unwrap_or_default();
        load[lightest] = load[lightest].saturating_add(weights[item]);
        split[lightest].push(item);
    }
    for list in &mut split {
        list.sort_unstable();
    }
    split
}

/// The identity of a plan (see the module docs) from its partial folder's manifest, hex.
pub fn plan_identity(manifest: &PartialManifest) -> String {
    let files: Vec<&str> = manifest.files.iter().map(|f| f.blake3.as_str()).collect();
    let bytes = serde_json::to_vec(&(
        "neurotex-plan",
        1,
        files,
        &manifest.sets,
        &manifest.settings,
    ))
    .unwrap_or_default();
    blake3::hash(&bytes).to_hex().to_string()
}

/// What a part file says about itself and its plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartHeader {
    /// The plan's identity ([`plan_identity`]).
    pub plan: String,
    /// The shard this part holds.
    pub shard: Shard,
    /// The groups of every shard (the whole split), each list ascending.
    pub split: Vec<Vec<usize>>,
    /// The number of sets of every group of the plan.
    pub group_sizes: Vec<usize>,
}

impl PartHeader {
    /// Internal consistency: the split has `count` shards and covers the groups once.
    fn check(&self) -> Result<(), String> {
        let Shard { index, count } = self.shard;
        if !(1..=MAX_SHARDS).contains(&count) || index >= count {
            return Err(format!("shard {index}/{count} is out of range"));
        }
        if self.split.len() != count as usize {
            return Err(format!(
                "a split into {} shards for shard {index}/{count}",
                self.split.len()
            ));
        }
        let n = self.group_sizes.len();
        let mut seen = vec![false; n];
        for &g in self.split.iter().flatten() {
            match seen.get_mut(g) {
                Some(s) if !*s => *s = true,
                _ => return Err(format!("group {g} is repeated or beyond the plan's {n}")),
            }
        }
        if seen.iter().any(|s| !s) || self.group_sizes.contains(&0) {
            return Err("the split does not cover every group of the plan".into());
        }
        if self
            .split
            .iter()
            .any(|l| l.windows(2).any(|w| w[0] >= w[1]))
        {
            return Err("a shard's groups are not in plan order".into());
        }
        Ok(())
    }

    /// The groups of this part's shard.
    pub fn groups(&self) -> &[usize] {
        &self.split[self.shard.index as usize]
    }
}

/// A part file: its header and the package of its shard's groups (decoder `j` is group
/// `header.groups()[j]`, its materials in the group's order).
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// What the part is.
    pub header: PartHeader,
    /// The shard's groups.
    pub package: NtcPackage,
}

impl Part {
    /// The part file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CompressError> {
        encode(&self.header, &self.package)
    }

    /// Write the part to `path` through a temporary file and a rename.
    pub fn write(&self, path: &Path) -> Result<(), CompressError> {
        write_part(path, &self.header, &self.package)
    }
}

/// The bytes of a part file of `header` and `package` (see the module docs).
fn encode(header: &PartHeader, package: &NtcPackage) -> Result<Vec<u8>, CompressError> {
    let header = serde_json::to_vec(header)
        .map_err(|e| CompressError::Groups(format!("part header: {e}")))?;
    let package = package.to_bytes()?;
    let mut out = Vec::with_capacity(PREFIX_LEN + header.len() + package.len() + CHECKSUM_LEN);
    out.extend_from_slice(&PART_MAGIC);
    out.extend_from_slice(&PART_VERSION.to_le_bytes());
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&package);
    let checksum = blake3::hash(&out);
    out.extend_from_slice(checksum.as_bytes());
    Ok(out)
}

/// Write the part of `header` and `package` to `path` through a temporary file and a
/// rename.
fn write_part(path: &Path, header: &PartHeader, package: &NtcPackage) -> Result<(), CompressError> {
    let bytes = encode(header, package)?;
    write_file(path, &bytes)
}

impl Part {
    /// Parse and check a part file's bytes; the error says what is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Part, String> {
        if bytes.len() < PREFIX_LEN + CHECKSUM_LEN {
            return Err(format!("{} bytes is too short for a part", bytes.len()));
        }
        if bytes[..8] != PART_MAGIC {
            return Err("it does not start with NTCPART (not a part of compress --shard)".into());
        }
        let (body, checksum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        if blake3::hash(body).as_bytes() != checksum {
            return Err("the checksum does not match (damaged or truncated)".into());
        }
        let word =
            |at: usize| u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
        let version = word(8);
        if version != PART_VERSION {
            return Err(format!(
                "version {version}, this build reads {PART_VERSION}"
            ));
        }
        let header_len = word(12) as usize;
        if header_len > MAX_HEADER_BYTES || header_len > body.len() - PREFIX_LEN {
            return Err(format!(
                "a header of {header_len} bytes does not fit the file"
            ));
        }
        let (header, package) = body[PREFIX_LEN..].split_at(header_len);
        let header: PartHeader =
            serde_json::from_slice(header).map_err(|e| format!("header: {e}"))?;
        header.check()?;
        let package = NtcPackage::from_bytes(package).map_err(|e| e.to_string())?;
        let groups = header.groups();
        if package.decoders.len() != groups.len() {
            return Err(format!(
                "{} decoders for the {} groups of shard {}/{}",
                package.decoders.len(),
                groups.len(),
                header.shard.index,
                header.shard.count
            ));
        }
        // Decoder j's materials, group by group (never allocating from the header's sizes).
        let mut decoders = package.materials.iter().map(|m| m.decoder);
        let fits =
            groups.iter().enumerate().all(|(j, &g)| {
                (0..header.group_sizes[g]).all(|_| decoders.next() == Some(j as u32))
            }) && decoders.next().is_none();
        if !fits {
            return Err("its materials do not match its groups' sizes and order".into());
        }
        Ok(Part { header, package })
    }

    /// Read and check the part at `path`.
    pub fn read(path: &Path) -> Result<Part, ShardError> {
        let bytes = crate::io::read_file(path, |path, source| ShardError::Read { path, source })?;
        Part::from_bytes(&bytes).map_err(|reason| ShardError::Damaged {
            path: path.to_path_buf(),
            reason,
        })
    }
}

/// Decoder `j` of `package` with its materials, as a package of its own (decoder 0).
fn decoder_package(package: &NtcPackage, j: usize) -> Result<NtcPackage, CompressError> {
    let mut one = NtcPackage::new(package.config.clone())?;
    one.decoders.push(package.decoders[j].clone());
    one.materials.extend(
        package
            .materials
            .iter()
            .filter(|m| m.decoder as usize == j)
            .cloned()
            .map(|mut m| {
                m.decoder = 0;
                m
            }),
    );
    Ok(one)
}

/// Join the parts of every shard of one plan (each named by its file, for errors) into
/// the package a run of every group writes: groups in plan order. Errors when a part is
/// of another plan or split, a shard is repeated or missing.
pub fn merge(parts: &[(PathBuf, Part)]) -> Result<NtcPackage, ShardError> {
    let (first_path, first) = parts.first().ok_or(ShardError::NoParts)?;
    let count = first.header.shard.count;
    let mut by_shard: Vec<Option<(&Path, &Part)>> = vec![None; count as usize];
    for (path, part) in parts {
        let h = &part.header;
        if h.shard.count != count {
            if h.plan != first.header.plan {
                return Err(ShardError::OtherPlan {
                    path: path.clone(),
                    first: first_path.clone(),
                });
            }
            return Err(ShardError::OtherCount {
                path: path.clone(),
                shard: h.shard.index,
                count: h.shard.count,
                first: first_path.clone(),
                first_count: count,
            });
        }
        if h.plan != first.header.plan
            || h.split != first.header.split
            || h.group_sizes != first.header.group_sizes
            || part.package.config != first.package.config
        {
            return Err(ShardError::OtherPlan {
                path: path.clone(),
                first: first_path.clone(),
            });
        }
        let Some(slot) = by_shard.get_mut(h.shard.index as usize) else {
            return Err(ShardError::OtherPlan {
                path: path.clone(),
                first: first_path.clone(),
            });
        };
        if let Some((earlier, _)) = slot {
            return Err(ShardError::Duplicate {
                first: earlier.to_path_buf(),
                path: path.clone(),
                shard: h.shard.index,
                count,
            });
        }
        *slot = Some((path.as_path(), part));
    }
    let missing: Vec<(u32, Vec<usize>)> = by_shard
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_none())
        .map(|(s, _)| (s as u32, first.header.split[s].clone()))
        .collect();
    if !missing.is_empty() {
        return Err(ShardError::Missing { missing, count });
    }
    // Where each group is: (shard, decoder within the part).
    let groups = first.header.group_sizes.len();
    let mut place = vec![(0usize, 0usize); groups];
    for (s, list) in first.header.split.iter().enumerate() {
        for (j, &g) in list.iter().enumerate() {
            place[g] = (s, j);
        }
    }
    let mut package = NtcPackage::new(first.package.config.clone()).map_err(CompressError::from)?;
    for &(s, j) in &place {
        let part = by_shard[s].map(|(_, p)| p).ok_or(ShardError::NoParts)?;
        super::compress::append(&mut package, decoder_package(&part.package, j)?);
    }
    Ok(package)
}

/// Train shard `shard` of `job`'s plan and write its part to `job.out` (see
/// [`compress_selected`] for the training, the partial folder and resuming). Returns the
/// part and the report of its groups.
pub fn compress_shard(
    job: &CompressJob<'_>,
    shard: Shard,
    progress: &mut dyn FnMut(&GroupProgress),
) -> Result<(Part, CompressReport), ShardError> {
    let (sets, groups) = (job.sets, job.groups);
    check_groups(groups, sets.len())?;
    let split = split_by_weight(&group_texels(groups, sets), shard.count);
    let manifest = PartialManifest::of_run(sets, job.constants, groups, job.opts)?;
    let header = PartHeader {
        plan: plan_identity(&manifest),
        shard,
        group_sizes: groups.iter().map(Vec::len).collect(),
        split,
    };
    let selection = header.groups().to_vec();
    let (package, report) = compress_selected(job, &selection, progress, &mut |package| {
        write_part(job.out, &header, package)
    })?;
    Ok((Part { header, package }, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntc::NtcConfig;
    use crate::ntc::format::NtcMaterial;
    use crate::ntc::model::LatentLayout;
    use crate::ntc::train::Quality;
    use crate::texture::CHANNELS;
    use crate::texture::ChannelMask;

    #[test]
    fn shard_arguments_and_the_environment() {
        let fixed = |index, count| ShardArg::Fixed(Shard { index, count });
        assert_eq!("2/3".parse::<ShardArg>().unwrap(), fixed(2, 3));
        assert_eq!("0/1".parse::<ShardArg>().unwrap(), fixed(0, 1));
        assert_eq!(
            "auto/8".parse::<ShardArg>().unwrap(),
            ShardArg::Auto { count: 8 }
        );
        for bad in ["3/3", "1", "-1/3", "a/3", "0/0", "auto/", "0/70000", "1/x"] {
            let e = bad.parse::<ShardArg>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("I/N"), "{bad}: {e}");
        }
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let auto = ShardArg::Auto { count: 4 };
        assert_eq!(
            auto.resolve(env(&[("SLURM_ARRAY_TASK_ID", "3")])).unwrap(),
            Shard { index: 3, count: 4 }
        );
        assert_eq!(
            auto.resolve(env(&[("JOB_COMPLETION_INDEX", "0")])).unwrap(),
            Shard { index: 0, count: 4 }
        );
        // Slurm's variable comes first.
        assert_eq!(
            auto.resolve(env(&[
                ("JOB_COMPLETION_INDEX", "0"),
                ("SLURM_ARRAY_TASK_ID", "2")
            ]))
            .unwrap()
            .index,
            2
        );
        let e = auto.resolve(env(&[])).unwrap_err().to_string();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID") && e.contains("JOB_COMPLETION_INDEX"),
            "{e}"
        );
        let e = auto
            .resolve(env(&[("SLURM_ARRAY_TASK_ID", "4")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=4") && e.contains("0-3"),
            "{e}"
        );
        assert!(auto.resolve(env(&[("JOB_COMPLETION_INDEX", "x")])).is_err());
        // A fixed shard ignores the environment.
        assert_eq!(
            fixed(1, 2).resolve(env(&[])).unwrap(),
            Shard { index: 1, count: 2 }
        );
    }

    #[test]
    fn the_split_balances_texels_largest_first() {
        // Largest first: 10 → shard 0; 8 → 1; 5 (item 0) → 2; 5 (item 3) → 2 (loads 10,
        // 8, 5); 3 → 1 (loads 10, 8, 10); 1 → 0 (loads 10, 11, 10: the lower index).
        let split = split_by_weight(&[5, 10, 3, 5, 8, 1], 3);
        assert_eq!(split, vec![vec![1, 5], vec![2, 4], vec![0, 3]]);
        // Ties go to the lower index, items of equal weight in index order.
        assert_eq!(
            split_by_weight(&[4, 4, 4, 4], 2),
            vec![vec![0, 2], vec![1, 3]]
        );
        // More shards than items: the rest stay empty; one shard takes everything.
        assert_eq!(split_by_weight(&[1, 2], 3), vec![vec![1], vec![0], vec![]]);
        assert_eq!(split_by_weight(&[1, 2, 3], 1), vec![vec![0, 1, 2]]);
        // Texels count every mip.
        let set = TextureSet::neutral();
        let texels: u64 = set.mips.iter().map(|m| u64::from(m.width * m.height)).sum();
        assert_eq!(
            group_texels(&[vec![0, 1], vec![1]], &[set.clone(), set]),
            vec![2 * texels, texels]
        );
    }

    /// A package of `sizes.len()` decoders, decoder `d` with `sizes[d]` materials named
    /// `<tag><d>.<i>`.
    fn package(tag: &str, sizes: &[usize]) -> NtcPackage {
        let config = NtcConfig::tiny();
        let mut p = NtcPackage::new(config.clone()).unwrap();
        for (d, &n) in sizes.iter().enumerate() {
            p.decoders.push(vec![
                half::f16::from_f32(d as f32);
                config.decoder_param_count()
            ]);
            for i in 0..n {
                let layout = LatentLayout::new(8, 8, 4, config.preset, config.features).unwrap();
                p.materials.push(NtcMaterial {
                    name: format!("{tag}{d}.{i}"),
                    present: ChannelMask::BASE_COLOR,
                    latents: vec![d as u32; layout.packed_words(config.latent_bits)],
                    layout,
                    decoder: d as u32,
                    constants: [1.0; CHANNELS],
                    quality: Quality::default(),
                });
            }
        }
        p
    }

    /// The parts of a plan with groups of `sizes` split into `count` shards, and the
    /// package of the whole plan.
    fn make_parts(plan: &str, sizes: &[usize], count: u32) -> (Vec<(PathBuf, Part)>, NtcPackage) {
        let weights: Vec<u64> = sizes.iter().map(|&s| s as u64).collect();
        let split = split_by_weight(&weights, count);
        let whole = package("g", sizes);
        let parts = (0..count)
            .map(|s| {
                let mut p = NtcPackage::new(whole.config.clone()).unwrap();
                for &g in &split[s as usize] {
                    crate::ntc::compress::append(&mut p, decoder_package(&whole, g).unwrap());
                }
                let header = PartHeader {
                    plan: plan.into(),
                    shard: Shard { index: s, count },
                    split: split.clone(),
                    group_sizes: sizes.to_vec(),
                };
                (
                    PathBuf::from(format!("{plan}-{s}.part")),
                    Part { header, package: p },
                )
            })
            .collect();
        (parts, whole)
    }

    #[test]
    fn parts_round_trip_and_damage_is_an_error() {
        let (parts, _) = make_parts("a", &[2, 1, 3], 2);
        let part = &parts[1].1;
        let bytes = part.to_bytes().unwrap();
        assert_eq!(&Part::from_bytes(&bytes).unwrap(), part);
        for cut in [0, 10, PREFIX_LEN + 3, bytes.len() / 2, bytes.len() - 1] {
            assert!(Part::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[bytes.len() / 2] ^= 4;
        let e = Part::from_bytes(&flipped).unwrap_err();
        assert!(e.contains("checksum"), "{e}");
        let e = Part::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err();
        assert!(e.contains("checksum"), "{e}");
        let mut foreign = bytes.clone();
        foreign[0] = b'X';
        assert!(Part::from_bytes(&foreign).unwrap_err().contains("NTCPART"));
        // A header that contradicts the package is refused even with a valid checksum.
        let mut lying = part.clone();
        let first_group = lying.header.groups()[0];
        lying.header.group_sizes[first_group] += 1;
        let e = Part::from_bytes(&lying.to_bytes().unwrap()).unwrap_err();
        assert!(e.contains("materials"), "{e}");
        // A size claim is never allocated for.
        lying.header.group_sizes[first_group] = usize::MAX;
        let e = Part::from_bytes(&lying.to_bytes().unwrap()).unwrap_err();
        assert!(e.contains("materials"), "{e}");
        let mut lying = part.clone();
        lying.header.split.pop();
        let e = Part::from_bytes(&lying.to_bytes().unwrap()).unwrap_err();
        assert!(e.contains("split"), "{e}");
    }

    #[test]
    fn merge_joins_groups_in_plan_order_and_refuses_bad_sets_of_parts() {
        let sizes = [2, 1, 3, 1, 2];
        let (parts, whole) = make_parts("a", &sizes, 3);
        // Any order of the parts gives the whole plan's package, byte for byte.
        let mut reversed = parts.clone();
        reversed.reverse();
        let merged = merge(&reversed).unwrap();
        assert_eq!(merged.to_bytes().unwrap(), whole.to_bytes().unwrap());

        let e = merge(&parts[..2]).unwrap_err().to_string();
        assert!(e.contains("missing the part of shard 2/3 (groups"), "{e}");
        let e = merge(&[parts[1].clone()]).unwrap_err().to_string();
        assert!(e.contains("shard 0/3") && e.contains("shard 2/3"), "{e}");
        let mut twice = parts.clone();
        twice.push(parts[1].clone());
        let e = merge(&twice).unwrap_err().to_string();
        assert!(
            e.contains("a-1.part") && e.contains("both shard 1/3"),
            "{e}"
        );
        let (other, _) = make_parts("b", &sizes, 3);
        let mut mixed = parts.clone();
        mixed[2] = other[2].clone();
        let e = merge(&mixed).unwrap_err().to_string();
        assert!(
            e.contains("b-2.part") && e.contains("another plan than a-0.part"),
            "{e}"
        );
        let (four, _) = make_parts("a", &sizes, 4);
        let e = merge(&[parts[0].clone(), four[1].clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("shard 1 of 4") && e.contains("into 3"), "{e}");
        assert!(matches!(merge(&[]), Err(ShardError::NoParts)));
    }
}
