//! The viewer's NTC packages: one background thread walks the NTC modes in order, reads
//! each fresh cached package and compresses the missing or stale ones on the GPU
//! ([`crate::packages::ScenePackages`]), reporting progress and finished packages over a
//! channel. The frame loop polls it and hands finished packages to the renderer, so the
//! scene is on screen (in Reference mode) while its packages are being made.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use crate::gpu::GpuContext;
use crate::ntc::NtcPackage;
use crate::open::OpenedScene;
use crate::packages::{PackageProgress, PackageRecipe, ScenePackages};
use crate::render::RenderMode;
use crate::texture::SceneTextures;

/// Where one mode's package stands.
#[derive(Clone, Debug, PartialEq)]
pub enum PackageStatus {
    /// Waiting for the modes before it.
    Queued,
    /// Reading it from the cache.
    Loading,
    /// Recording the scene's views for its groups (`divergence-aware`): `done` of `views`.
    Recording {
        /// Views recorded.
        done: usize,
        /// Views to record.
        views: usize,
    },
    /// Training: group `group` of `groups` on device `device`, `step` of `total`.
    Compressing {
        /// The device training it (index into the job's devices).
        device: usize,
        /// Group being trained (0-based).
        group: usize,
        /// Groups in the package.
        groups: usize,
        /// Steps done in this group.
        step: u64,
        /// Steps of this group.
        total: u64,
    },
    /// In the renderer.
    Ready,
    /// Failed; the message says why.
    Failed(String),
}

impl PackageStatus {
    /// A short line for the overlay.
    pub fn describe(&self) -> String {
        match self {
            PackageStatus::Queued => "queued".into(),
            PackageStatus::Loading => "loading…".into(),
            PackageStatus::Recording { done, views } => format!("recording views: {done}/{views}"),
            PackageStatus::Compressing {
                device,
                group,
                groups,
                step,
                total,
            } => format!(
                "compressing: group {}/{groups}, step {step}/{total}{}",
                group + 1,
                if *device > 0 {
                    format!(" (device {device})")
                } else {
                    String::new()
                }
            ),
            PackageStatus::Ready => "ready".into(),
            PackageStatus::Failed(m) => format!("failed: {m}"),
        }
    }
}

/// A finished package and its scene-material map.
pub struct ReadyPackage {
    /// The mode it serves.
    pub mode: RenderMode,
    /// The package.
    pub package: NtcPackage,
    /// Per scene material, its package material.
    pub material_map: Vec<Option<u32>>,
}

enum Event {
    Status(RenderMode, PackageStatus),
    Ready(ReadyPackage),
}

/// The background package thread of one scene.
pub struct PackageJobs {
    rx: mpsc::Receiver<Event>,
    cancel: Arc<AtomicBool>,
    status: BTreeMap<usize, (RenderMode, PackageStatus)>,
}

impl PackageJobs {
    /// Start making the packages of `scene` for `modes` (the NTC ones among them, in
    /// order; `prebuilt`: a folder of `<strategy>.ntc` files to use instead of the cache
    /// where present), compressing missing ones from its decoded `textures` on `devices`
    /// (the viewer's own, or those of `--devices`); `views` (the opened scene and its
    /// argument) are what the divergence-aware mode records its co-occurrence from.
    pub fn start(
        devices: Vec<GpuContext>,
        scene: PathBuf,
        textures: Arc<SceneTextures>,
        recipe: PackageRecipe,
        prebuilt: Option<PathBuf>,
        modes: &[RenderMode],
        views: Option<(Arc<OpenedScene>, PathBuf)>,
    ) -> Self {
        let (tx, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let mut wanted: Vec<RenderMode> = Vec::new();
        for &m in modes {
            if m.is_ntc() && !wanted.contains(&m) {
                wanted.push(m);
            }
        }
        let modes = wanted;
        let status = modes
            .iter()
            .enumerate()
            .map(|(i, &m)| (i, (m, PackageStatus::Queued)))
            .collect();
        let flag = cancel.clone();
        let spawned = std::thread::Builder::new()
            .name("ntc-packages".into())
            .spawn(move || {
                let job = Job {
                    devices,
                    scene,
                    textures,
                    recipe,
                    prebuilt,
                    modes,
                    views,
                };
                run(job, &flag, &tx)
            });
        let jobs = Self { rx, cancel, status };
        if let Err(e) = spawned {
            let mut jobs = jobs;
            for (_, s) in jobs.status.values_mut() {
                *s = PackageStatus::Failed(format!("cannot start the package thread: {e}"));
            }
            return jobs;
        }
        jobs
    }

    /// Apply what the thread reported; returns the packages that became ready.
    pub fn poll(&mut self) -> Vec<ReadyPackage> {
        let mut ready = Vec::new();
        while let Ok(event) = self.rx.try_recv() {
            match event {
                Event::Status(mode, s) => self.set(mode, s),
                Event::Ready(p) => {
                    self.set(p.mode, PackageStatus::Ready);
                    ready.push(p);
                }
            }
        }
        ready
    }

    fn set(&mut self, mode: RenderMode, s: PackageStatus) {
        if let Some((_, status)) = self.status.values_mut().find(|(m, _)| *m == mode) {
            *status = s;
        }
    }

    /// Every NTC mode with its status, in order.
    pub fn statuses(&self) -> Vec<(RenderMode, PackageStatus)> {
        self.status.values().cloned().collect()
    }

    /// The status of `mode` (Ready for the reference; Failed for a mode not prepared).
    pub fn status(&self, mode: RenderMode) -> PackageStatus {
        if !mode.is_ntc() {
            return PackageStatus::Ready;
        }
        self.status.values().find(|(m, _)| *m == mode).map_or_else(
            || PackageStatus::Failed("not prepared (see --modes)".into()),
            |(_, s)| s.clone(),
        )
    }
}

impl Drop for PackageJobs {
    fn drop(&mut self) {
        // Stops training at the next progress report; the partial work stays cached.
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// What the package thread works on.
struct Job {
    devices: Vec<GpuContext>,
    scene: PathBuf,
    textures: Arc<SceneTextures>,
    recipe: PackageRecipe,
    prebuilt: Option<PathBuf>,
    modes: Vec<RenderMode>,
    views: Option<(Arc<OpenedScene>, PathBuf)>,
}

fn run(job: Job, cancel: &AtomicBool, tx: &mpsc::Sender<Event>) {
    let fail_all = |message: String| {
        for &m in &job.modes {
            let _ = tx.send(Event::Status(m, PackageStatus::Failed(message.clone())));
        }
    };
    let packages = match ScenePackages::open(&job.scene, job.recipe) {
        Ok(p) => match job.views {
            Some((opened, arg)) => p.with_prebuilt(job.prebuilt).with_views(opened, arg),
            None => p.with_prebuilt(job.prebuilt),
        },
        Err(e) => return fail_all(e.to_string()),
    };
    for &mode in &job.modes {
        if cancel.load(Ordering::Relaxed) {
            return;
        }
        let Some(strategy) = mode.strategy() else {
            continue;
        };
        let fresh = packages.is_fresh(strategy);
        let _ = tx.send(Event::Status(
            mode,
            if fresh {
                PackageStatus::Loading
            } else {
                PackageStatus::Compressing {
                    device: 0,
                    group: 0,
                    groups: 0,
                    step: 0,
                    total: 0,
                }
            },
        ));
        let result =
            packages.load_or_compress(&job.devices, strategy, &job.textures, cancel, &mut |p| {
                let status = match p {
                    PackageProgress::Recording { done, views } => {
                        PackageStatus::Recording { done, views }
                    }
                    PackageProgress::Training(p) => PackageStatus::Compressing {
                        device: p.device,
                        group: p.group,
                        groups: p.groups,
                        step: p.train.step,
                        total: p.train.total,
                    },
                };
                let _ = tx.send(Event::Status(mode, status));
            });
        let event = result
            .map_err(|e| e.to_string())
            .and_then(|package| {
                let material_map = packages.material_map(&package).map_err(|e| e.to_string())?;
                Ok(ReadyPackage {
                    mode,
                    package,
                    material_map,
                })
            })
            .map_or_else(
                |message| Event::Status(mode, PackageStatus::Failed(message)),
                Event::Ready,
            );
        if tx.send(event).is_err() {
            return;
        }
    }
}
