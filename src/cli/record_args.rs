//! The screen co-occurrence inputs that `cluster` and `eval` share
//! ([`CooccurrenceArgs`]): a record file to read, or the one `--scene`'s views recorded
//! on the GPU (into a file of one's own or the scene's package cache, reused there while
//! the scene is unchanged).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::cluster;
use neurotex::gpu::GpuContext;
use neurotex::packages::views::{self as record, RecordSettings};
use neurotex::packages::{PackageRecipe, ScenePackages};
use neurotex::screen::tiles::TileSize;
use neurotex::texture;

use super::args::{InputsArg, TextureLimitArg, parse_size};
use super::output_policy;

/// Where the screen co-occurrence record of the scene's views comes from, and the weight
/// of its divergence term in `divergence-aware`.
#[derive(Args, Debug)]
pub struct CooccurrenceArgs {
    /// Co-occurrence record of the scene's views (JSON) to read. With a record, every
    /// plan's predicted divergence on the recorded views is reported. Without one,
    /// `divergence-aware` records the `--scene`'s views into the scene's package cache
    /// (or reuses the record there while the scene is unchanged).
    #[arg(long, conflicts_with = "record_cooccurrence")]
    pub cooccurrence: Option<PathBuf>,
    /// Record the `--scene`'s views into this file (reused when it already holds a record
    /// of the same scene files, sets, tile, size and views) and use it.
    #[arg(long)]
    pub record_cooccurrence: Option<PathBuf>,
    /// Size of the recorded views, WIDTHxHEIGHT. Default: the scene's, else 1280x720.
    #[arg(long, value_parser = parse_size)]
    record_size: Option<(u32, u32)>,
    /// Screen tile of the recorded views (the decode pass's).
    #[arg(long, value_enum, default_value_t = TileSize::T8x8)]
    record_tile: TileSize,
    /// Seconds between two recorded samples of each camera path.
    #[arg(long, default_value_t = record::DEFAULT_INTERVAL)]
    record_interval: f32,
    /// Weight of the divergence term against the appearance spread in `divergence-aware`,
    /// 0..=1 (0: appearance only, 1: divergence only).
    #[arg(long, default_value_t = cluster::DEFAULT_COOCCURRENCE_WEIGHT)]
    pub cooccurrence_weight: f64,
}

/// A record [`CooccurrenceArgs::record`] gave, and the file it came from.
pub type Recorded = Option<(cluster::CooccurrenceRecord, PathBuf)>;

impl CooccurrenceArgs {
    /// `recorded` as the plan makers take it, with `--cooccurrence-weight`.
    pub fn input<'a>(&self, recorded: &'a Recorded) -> Option<cluster::CooccurrenceInput<'a>> {
        recorded
            .as_ref()
            .map(|(record, file)| cluster::CooccurrenceInput {
                record,
                file,
                weight: self.cooccurrence_weight,
            })
    }

    /// True when a record was asked for by file (`--cooccurrence` or
    /// `--record-cooccurrence`).
    pub fn given(&self) -> bool {
        self.cooccurrence.is_some() || self.record_cooccurrence.is_some()
    }

    /// The record and its file: `--cooccurrence`'s, the views recorded into
    /// `--record-cooccurrence`, or — with neither, when `needed` — the scene's package
    /// cache's ([`record_scene`]); `None` when no record is given and none is needed.
    pub fn record(&self, inputs: &InputsArg, needed: bool) -> Result<Recorded> {
        Ok(match (&self.cooccurrence, &self.record_cooccurrence) {
            (Some(file), _) => {
                let record = cluster::CooccurrenceRecord::read(file)?;
                check_record_scene(&record, file, inputs)?;
                Some((record, file.clone()))
            }
            (None, Some(file)) => Some(record_scene(inputs, self, Some(file))?),
            (None, None) if needed => Some(record_scene(inputs, self, None)?),
            (None, None) => None,
        })
    }
}

/// A record given with `--cooccurrence` to a command of one `--scene`: the files of the
/// scene it was recorded from must still have the lengths and CRC-32s it recorded (in
/// order; their paths may differ between machines), else its counts describe another
/// scene and it is refused.
fn check_record_scene(
    record: &cluster::CooccurrenceRecord,
    file: &std::path::Path,
    inputs: &InputsArg,
) -> Result<()> {
    let [scene] = inputs.scenes.as_slice() else {
        return Ok(());
    };
    let opened = neurotex::open::open(Some(scene))?;
    let now = record::scene_files(&opened, scene)?;
    let recorded = &record.source.scene_files;
    let stamp = |d: &cluster::FileDigest| (d.bytes, d.crc32);
    let changed = recorded
        .iter()
        .zip(&now)
        .find(|(a, b)| stamp(a) != stamp(b))
        .map(|(a, b)| {
            format!(
                "{} was {} bytes, crc32 {:08x}; {} is {} bytes, crc32 {:08x}",
                a.file, a.bytes, a.crc32, b.file, b.bytes, b.crc32
            )
        })
        .or_else(|| {
            (recorded.len() != now.len()).then(|| {
                format!(
                    "it recorded {} files of the scene, the scene has {}",
                    recorded.len(),
                    now.len()
                )
            })
        });
    match changed {
        None => Ok(()),
        Some(what) => anyhow::bail!(
            "{}: recorded from {}, whose files are not those of {} ({what}); record it anew \
             with --record-cooccurrence, or give the scene it was recorded from",
            file.display(),
            record.source.scene,
            scene.display()
        ),
    }
}

/// The co-occurrence record of the one `--scene` of `inputs`: `file`'s (or, without one,
/// the scene's package cache's) when it holds a record of the scene as it is now, else
/// the scene's views recorded on the GPU (with a progress bar) and written there.
fn record_scene(
    inputs: &InputsArg,
    c: &CooccurrenceArgs,
    file: Option<&PathBuf>,
) -> Result<(cluster::CooccurrenceRecord, PathBuf)> {
    let [scene] = inputs.scenes.as_slice() else {
        anyhow::bail!(
            "recording the screen co-occurrence needs exactly one --scene (given {}); or \
             pass a record with --cooccurrence FILE",
            inputs.scenes.len()
        );
    };
    let opened = neurotex::open::open(Some(scene))?;
    let defaults = RecordSettings::for_scene(&opened);
    let settings = RecordSettings {
        size: c.record_size.unwrap_or(defaults.size),
        tile: c.record_tile,
        interval: c.record_interval,
    };
    let file = match file {
        Some(f) => f.clone(),
        None => ScenePackages::open(scene, PackageRecipe::default())?
            .cooccurrence_path(scene, &settings),
    };
    let (source, _) = record::expected_source(&opened, scene, &settings)?;
    if let Some(existing) = record::reusable(&file, &source) {
        println!("co-occurrence: reusing {}", file.display());
        return Ok((existing, file));
    }
    let policy = output_policy(super::scene_files(&opened, Some(scene)));
    if c.record_cooccurrence.is_some() {
        policy.check_all([file.as_path()])?;
    }
    let limit = TextureLimitArg {
        max_texture_size: inputs.limit.max_texture_size,
    };
    let textures = texture::SceneTextures::load(&opened.scene.materials, &limit.load_options())?;
    let ctx = GpuContext::headless()?;
    let bar = super::steps_bar("recording views [{bar:32}] {pos}/{len}  ETA {eta}")?;
    bar.set_length(source.views.len() as u64);
    let recorded = record::load_or_record(
        &ctx,
        &opened,
        scene,
        &textures,
        &settings,
        &file,
        &mut |done, _| bar.set_position(done as u64),
    )?;
    bar.finish_and_clear();
    println!(
        "co-occurrence: recorded {} views ({}×{}, {} tiles) of {} into {}",
        source.views.len(),
        settings.size.0,
        settings.size.1,
        settings.tile,
        scene.display(),
        file.display()
    );
    Ok((recorded.record, file))
}
