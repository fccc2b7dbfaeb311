//! The NTC packages a scene is rendered with: one per sharing strategy, compressed on
//! demand from the scene's own texture sets and cached, so that the viewer and
//! `neurotex render --mode …` can switch between per-material, clustered, single,
//! random and category decoders without a separate compression step.
//!
//! A cached package sits in `<cache>/packages/<scene>-<hash>/<strategy>.ntc` beside a
//! `<strategy>.key` text file that lists everything its content depends on: the
//! package format, the recipe (preset, steps, m, seed, texture size limit) and, per
//! texture set, each image file with its size and modification time. A package whose key
//! file differs is stale and is compressed again.
//!
//! The `divergence-aware` package also depends on the scene's screen co-occurrence: its
//! record (`cooccurrence-<scene>-<tile>-<W>x<H>.json`, from
//! [`views`], which renders the G-buffers of the scene's views) sits
//! in the same folder, is recorded when missing or stale ([`ScenePackages::with_views`]
//! hands over the scene with its camera paths), and its length and CRC-32 enter the key.

pub mod views;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use std::sync::Arc;

use crate::cluster::{self, ClusterError, FileDigest, Plan, Strategy};
use crate::gpu::{GpuContext, GpuError, KernelError};
use crate::inputs::{InputError, InputSets, InputSource};
use crate::ntc::compress::{CompressError, CompressJob, CompressOptions, RateControl, compress};
use crate::ntc::parallel::GroupProgress;
use crate::ntc::train::LossWeighting;
use crate::ntc::train::gpu::LatentAdam;
use crate::ntc::{NtcFormatError, NtcPackage, Preset, Recipe, TrainConfig};
use crate::open::{OpenedScene, cache_dir};
use crate::render::RenderError;
use crate::render::ntc_gpu::{NtcRenderError, map_materials};
use crate::scene::{ImageSource, SceneError};
use crate::texture::{SceneTextures, TextureSet, set_constants};
use views::{RecordSettings, load_or_record};

/// How far [`ScenePackages::load_or_compress`] has come.
#[derive(Clone, Copy, Debug)]
pub enum PackageProgress<'a> {
    /// Recording the scene's views for the `divergence-aware` groups: `done` of `views`.
    Recording {
        /// Views recorded.
        done: usize,
        /// Views to record.
        views: usize,
    },
    /// Training a group.
    Training(&'a GroupProgress),
}

/// Errors while finding or making a scene's packages.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The scene or its texture sets could not be opened.
    #[error(transparent)]
    Inputs(#[from] InputError),
    /// Grouping failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// Compression failed or was interrupted.
    #[error(transparent)]
    Compress(#[from] CompressError),
    /// A cached package could not be read.
    #[error(transparent)]
    Format(#[from] NtcFormatError),
    /// The decoded texture sets handed in are not this scene's, or not as the recipe
    /// needs them.
    #[error("{scene}: cannot compress its packages from these texture sets: {reason}")]
    Textures {
        /// The scene file.
        scene: PathBuf,
        /// What does not match.
        reason: String,
    },
    /// A scene file could not be read for recording its views.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// The renderer that records the views could not be made.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// The co-occurrence pass could not be built.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// Rendering or reading back a view failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The sampling interval or the number of views is unusable.
    #[error("{scene}: {reason}")]
    Views {
        /// The scene.
        scene: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The divergence-aware package was asked for without the scene's views.
    #[error(
        "{scene}: the divergence-aware package needs the scene's views to record their \
         co-occurrence, and none were given"
    )]
    NoViews {
        /// The scene file.
        scene: PathBuf,
    },
    /// A cache file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// How the packages of a scene are made.
#[derive(Clone, Debug, PartialEq)]
pub struct PackageRecipe {
    /// Latent grid scale.
    pub preset: Preset,
    /// Main training steps per texture set (a group of `k` sets trains `k` times as
    /// many).
    pub steps: u64,
    /// Groups of the clustered and random strategies (clamped to the number of sets).
    pub m: usize,
    /// Seed of k-means, of the random grouping and of training.
    pub seed: u64,
    /// Downscale textures so that no side exceeds this.
    pub max_texture_size: Option<u32>,
}

impl Default for PackageRecipe {
    fn default() -> Self {
        Self {
            preset: Preset::High,
            steps: Recipe::Default.values().steps,
            m: 10,
            seed: 1,
            max_texture_size: None,
        }
    }
}

impl PackageRecipe {
    /// The training configuration: the default recipe at `preset` (gradual decoder
    /// freezing for every group of two or more sets).
    pub fn train_config(&self) -> TrainConfig {
        Recipe::Default.config(self.preset)
    }
}

/// The groups of `strategy` over `sets` (stats embeddings for clustered, random and
/// divergence-aware; the inputs' category labels for category; `cooccurrence` for
/// divergence-aware, at its default weight). `m` is clamped to the number of sets.
pub fn plan_for(
    inputs: &InputSets,
    sets: &[TextureSet],
    strategy: Strategy,
    m: usize,
    seed: u64,
    cooccurrence: Option<(&cluster::CooccurrenceRecord, &Path)>,
) -> Result<Plan, ClusterError> {
    let embeddings = cluster::embed_sets(sets, &cluster::EmbedderChoice::Stats)?;
    let clamped = m.clamp(1, sets.len().max(1));
    if clamped != m
        && matches!(
            strategy,
            Strategy::Clustered | Strategy::Random | Strategy::DivergenceAware
        )
    {
        log::warn!(
            "{strategy} groups: m = {m} is more than the scene's {} texture sets; using {clamped}",
            sets.len()
        );
    }
    let m = clamped;
    let plan_inputs = cluster::PlanInputs {
        categories: Some(&inputs.categories),
        cooccurrence: cooccurrence.map(|(record, file)| cluster::CooccurrenceInput {
            record,
            file,
            weight: cluster::DEFAULT_COOCCURRENCE_WEIGHT,
        }),
    };
    cluster::make_plan_with(strategy, &embeddings, m, seed, &plan_inputs)
}

/// The scene a divergence-aware package records its views from.
#[derive(Clone, Debug)]
struct SceneViews {
    opened: Arc<OpenedScene>,
    /// The scene as given (description or glTF), named in the record.
    scene: PathBuf,
    settings: RecordSettings,
}

/// The packages of one scene.
#[derive(Clone, Debug)]
pub struct ScenePackages {
    scene: PathBuf,
    inputs: InputSets,
    recipe: PackageRecipe,
    dir: PathBuf,
    sets_key: String,
    prebuilt: Option<PathBuf>,
    views: Option<SceneViews>,
}

impl ScenePackages {
    /// The packages of the scene file `scene` (`.toml`, `.gltf`, `.glb`), cached under
    /// the default cache folder.
    pub fn open(scene: &Path, recipe: PackageRecipe) -> Result<Self, PackageError> {
        Self::open_in(scene, recipe, &cache_dir().join("packages"))
    }

    /// As [`open`](Self::open), caching under `root`.
    pub fn open_in(scene: &Path, recipe: PackageRecipe, root: &Path) -> Result<Self, PackageError> {
        let inputs = InputSets::open(&[InputSource::Scene(scene.to_path_buf())])?;
        let canonical = scene.canonicalize().unwrap_or_else(|_| scene.to_path_buf());
        let stem = scene
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scene".into());
        let dir = root.join(format!(
            "{stem}-{:08x}",
            crc32fast::hash(canonical.to_string_lossy().as_bytes())
        ));
        let sets_key = sets_key(&inputs);
        Ok(Self {
            scene: scene.to_path_buf(),
            inputs,
            recipe,
            dir,
            sets_key,
            prebuilt: None,
            views: None,
        })
    }

    /// Prefer `<dir>/<strategy>.ntc` where it exists (packages made elsewhere, e.g. by
    /// `neurotex compress --strategy …`) over the cache.
    pub fn with_prebuilt(mut self, dir: Option<PathBuf>) -> Self {
        self.prebuilt = dir;
        self
    }

    /// Record the divergence-aware package's co-occurrence from `opened` (given as `scene`:
    /// its camera paths, else its cameras) with [`RecordSettings::for_scene`].
    pub fn with_views(mut self, opened: Arc<OpenedScene>, scene: PathBuf) -> Self {
        let settings = RecordSettings::for_scene(&opened);
        self.views = Some(SceneViews {
            opened,
            scene,
            settings,
        });
        self
    }

    /// Where the co-occurrence record of the views of `scene` under `settings` is kept:
    /// beside the packages.
    pub fn cooccurrence_path(&self, scene: &Path, settings: &RecordSettings) -> PathBuf {
        let stem = scene
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scene".into());
        self.dir.join(format!(
            "cooccurrence-{stem}-{}-{}x{}.json",
            settings.tile, settings.size.0, settings.size.1
        ))
    }

    /// The record file of the divergence-aware package (None without views).
    fn record_path(&self) -> Option<PathBuf> {
        let views = self.views.as_ref()?;
        Some(self.cooccurrence_path(&views.scene, &views.settings))
    }

    /// The prebuilt package of `strategy`, if one was given and exists.
    pub fn prebuilt(&self, strategy: Strategy) -> Option<PathBuf> {
        self.prebuilt
            .as_ref()
            .map(|d| d.join(format!("{}.ntc", strategy.name())))
            .filter(|p| p.is_file())
    }

    /// The scene's distinct texture sets.
    pub fn inputs(&self) -> &InputSets {
        &self.inputs
    }

    /// The recipe.
    pub fn recipe(&self) -> &PackageRecipe {
        &self.recipe
    }

    /// Where the package of `strategy` is cached.
    pub fn path(&self, strategy: Strategy) -> PathBuf {
        self.dir.join(format!("{}.ntc", strategy.name()))
    }

    fn key_path(&self, strategy: Strategy) -> PathBuf {
        self.dir.join(format!("{}.key", strategy.name()))
    }

    /// Everything the package of `strategy` depends on, as text.
    pub fn key(&self, strategy: Strategy) -> String {
        let r = &self.recipe;
        let record = match (strategy, self.record_path()) {
            (Strategy::DivergenceAware, Some(file)) => match FileDigest::of(&file, "record") {
                Ok(d) => format!(
                    "cooccurrence {} {} {:08x}\n",
                    file.display(),
                    d.bytes,
                    d.crc32
                ),
                Err(_) => format!("cooccurrence {} missing\n", file.display()),
            },
            _ => String::new(),
        };
        format!(
            "neurotex scene package\nformat {}\nscene {}\nstrategy {}\npreset {:?}\nsteps per set {}\nm {}\nseed {}\nmax_texture_size {:?}\n{record}{}",
            crate::ntc::format::VERSION,
            self.scene.display(),
            strategy.name(),
            r.preset,
            r.steps,
            r.m,
            r.seed,
            r.max_texture_size,
            self.sets_key
        )
    }

    /// True when a prebuilt package of `strategy` is given or the cached one exists and
    /// was made from the current textures with the current recipe (and, divergence-aware,
    /// from a co-occurrence record that is still the scene's).
    pub fn is_fresh(&self, strategy: Strategy) -> bool {
        self.prebuilt(strategy).is_some()
            || self.path(strategy).is_file()
                && std::fs::read_to_string(self.key_path(strategy))
                    .is_ok_and(|k| k == self.key(strategy))
                && (strategy != Strategy::DivergenceAware || self.record_is_current())
    }

    /// Whether the divergence-aware record file exists and was made from the scene as it
    /// is now.
    fn record_is_current(&self) -> bool {
        let (Some(views), Some(file)) = (&self.views, self.record_path()) else {
            return false;
        };
        views::expected_source(&views.opened, &views.scene, &views.settings)
            .ok()
            .and_then(|(source, _)| views::reusable(&file, &source))
            .is_some()
    }

    /// The package of `strategy`: read from the cache when fresh, else compressed on
    /// `devices` (one or more, see [`crate::ntc::parallel`]) from `textures` (the scene's
    /// sets as the renderer got them, decoded without
    /// missing images at the recipe's size limit; `progress` after each recorded view and
    /// as training advances; `cancel` stops training, keeping partial progress for the
    /// next call) and cached.
    pub fn load_or_compress(
        &self,
        devices: &[GpuContext],
        strategy: Strategy,
        textures: &SceneTextures,
        cancel: &AtomicBool,
        progress: &mut dyn FnMut(PackageProgress<'_>),
    ) -> Result<NtcPackage, PackageError> {
        if let Some(prebuilt) = self.prebuilt(strategy) {
            return Ok(NtcPackage::read(&prebuilt)?);
        }
        let path = self.path(strategy);
        if self.is_fresh(strategy) {
            return Ok(NtcPackage::read(&path)?);
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| PackageError::Io {
            path: self.dir.clone(),
            source,
        })?;
        self.check_textures(textures)?;
        let record = match strategy {
            Strategy::DivergenceAware => {
                let views = self.views.as_ref().ok_or_else(|| PackageError::NoViews {
                    scene: self.scene.clone(),
                })?;
                let file = self.record_path().expect("views are given");
                // The views are recorded on the first device.
                let ctx = devices.first().ok_or_else(|| {
                    crate::ntc::compress::CompressError::Groups("no device to train on".into())
                })?;
                let recorded = load_or_record(
                    ctx,
                    &views.opened,
                    &views.scene,
                    textures,
                    &views.settings,
                    &file,
                    &mut |done, views| progress(PackageProgress::Recording { done, views }),
                )?;
                Some((recorded.record, file))
            }
            _ => None,
        };
        let sets = &textures.sets;
        let plan = plan_for(
            &self.inputs,
            sets,
            strategy,
            self.recipe.m,
            self.recipe.seed,
            record.as_ref().map(|(r, f)| (r, f.as_path())),
        )?;
        let groups: Vec<Vec<usize>> = plan.groups.iter().map(|g| g.indices.clone()).collect();
        let constants = set_constants(
            &self.inputs.materials,
            &self.inputs.material_sets,
            sets.len(),
        );
        let options = CompressOptions {
            train: self.recipe.train_config(),
            steps: self.recipe.steps,
            seed: self.recipe.seed,
            // An interrupted compression of the same key continues where it stopped.
            resume: std::fs::read_to_string(self.key_path(strategy))
                .is_ok_and(|k| k == self.key(strategy)),
            skip_bcn: true,
            log_every: 100,
            rate: RateControl::Fixed,
            kernel: None,
            latent_adam: LatentAdam::default(),
            input_files: self.inputs.files(),
            loss_weights: LossWeighting::default(),
            flip: false,
            start_by: None,
        };
        // Progress of another key is stale: the cache owns it and starts afresh.
        if !options.resume {
            crate::ntc::compress::remove_partial_if_ours(&path)?;
        }
        // The key is written first: it marks the partial folder as belonging to it, and
        // the package (written last, by rename) is what makes the pair fresh.
        let key_path = self.key_path(strategy);
        crate::io::write_atomic(&key_path, self.key(strategy).as_bytes()).map_err(|source| {
            PackageError::Io {
                path: key_path,
                source,
            }
        })?;
        let mut run = |options: &CompressOptions| {
            let job = CompressJob {
                devices,
                sets,
                constants: &constants,
                groups: &groups,
                opts: options,
                inputs: &self.scene.display().to_string(),
                out: &path,
                cancel,
            };
            compress(&job, &mut |p| progress(PackageProgress::Training(p)))
        };
        let package = match run(&options) {
            Ok((package, _)) => package,
            // The cache owns its partial progress: progress of the scene as it was before
            // an edit (or a damaged marker) is deleted and the package made afresh,
            // never left to block every later render.
            Err(CompressError::PartialMismatch { .. } | CompressError::PartialDamaged { .. })
                if options.resume =>
            {
                log::info!(
                    "{}: stale progress of an earlier compression removed",
                    path.display()
                );
                crate::ntc::compress::remove_partial_if_ours(&path)?;
                let fresh = CompressOptions {
                    resume: false,
                    ..options.clone()
                };
                run(&fresh)?.0
            }
            Err(e) => return Err(e.into()),
        };
        Ok(package)
    }

    /// Whether `textures` are this scene's sets as compression needs them: the same sets,
    /// none missing an image, at the recipe's size limit.
    fn check_textures(&self, textures: &SceneTextures) -> Result<(), PackageError> {
        let reason = if textures.descs != self.inputs.descs {
            Some(format!(
                "they are {} sets of another scene, not its {}",
                textures.descs.len(),
                self.inputs.descs.len()
            ))
        } else if let Some(missing) = textures.missing.first() {
            Some(format!(
                "{} image(s) are missing ({missing}); packages need every image",
                textures.missing.len()
            ))
        } else if textures.options.max_size != self.recipe.max_texture_size {
            Some(format!(
                "they were decoded at the size limit {:?}, the recipe has {:?}",
                textures.options.max_size, self.recipe.max_texture_size
            ))
        } else {
            None
        };
        reason.map_or(Ok(()), |reason| {
            Err(PackageError::Textures {
                scene: self.scene.clone(),
                reason,
            })
        })
    }

    /// Per scene material, the index of the package material holding its texture set
    /// (None for materials without textures). Sets are matched by name; a set missing
    /// from the package is an error naming it and the material.
    pub fn material_map(&self, package: &NtcPackage) -> Result<Vec<Option<u32>>, NtcRenderError> {
        material_map(&self.inputs, package)
    }
}

/// Per material of `inputs`, the index of the package material with its set's (unique)
/// name.
pub fn material_map(
    inputs: &InputSets,
    package: &NtcPackage,
) -> Result<Vec<Option<u32>>, NtcRenderError> {
    let material_names: Vec<String> = inputs.materials.iter().map(|m| m.name.clone()).collect();
    map_materials(
        package,
        &inputs.material_sets,
        &inputs.names,
        &material_names,
    )
}

/// The inputs' identities: every file the sets come from (the scene's description,
/// glTF, buffers and images) with its size and modification time, and every set's
/// images by slot.
fn sets_key(inputs: &InputSets) -> String {
    let mut s = String::new();
    for path in inputs.files() {
        let meta = std::fs::metadata(&path).ok();
        let modified = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        s.push_str(&format!(
            "file {} {} {modified}\n",
            path.display(),
            meta.map_or(0, |m| m.len())
        ));
    }
    for (name, desc) in inputs.names.iter().zip(&inputs.descs) {
        s.push_str(&format!("set {name}\n"));
        for (slot, source) in desc.sources() {
            let what = match source {
                // Its size and time are among the files above.
                ImageSource::File(path) => path.display().to_string(),
                ImageSource::Embedded { name, bytes } => {
                    format!("{name} {} {:08x}", bytes.len(), crc32fast::hash(bytes))
                }
            };
            s.push_str(&format!("  {slot:?} {what}\n"));
        }
    }
    s
}
