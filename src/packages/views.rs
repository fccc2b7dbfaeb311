//! Recording a scene's screen co-occurrence: the views of its camera paths (sampled every
//! Δt) or, without paths, its cameras, each rendered as a G-buffer by the [`Renderer`]
//! and counted by the co-occurrence pass ([`crate::render::passes::tile_signatures`]) into a
//! [`CooccurrenceRecord`] that carries its [`RecordSource`].
//!
//! Owns which views a scene has ([`scene_views`]), the identity of a record made from
//! them ([`expected_source`]: the scene files' digests, the set names, the tile, the size,
//! the views), the recording itself ([`record_views`]) and the reuse of a record file
//! while its source is unchanged ([`reusable`], [`load_or_record`]; a stale or damaged
//! file is recorded anew). It sits above `cluster` (whose record type it fills) and does
//! not decide where records are stored: the package cache (`packages`) and the command
//! line name the file.

use std::path::Path;

use super::PackageError;
use crate::cluster::{
    ClusterError, CooccurrenceRecord, FileDigest, RecordSource, ViewCounts, ViewSpec,
};
use crate::gpu::{GpuContext, GpuError, GpuProfiler};
use crate::open::{OpenedScene, select_camera};
use crate::render::Renderer;
use crate::render::passes::divergence::DecoderMap;
use crate::render::passes::tile_signatures::{
    CooccurrenceInputs, CooccurrencePass, SignatureBuffer,
};
use crate::scene::Camera;
use crate::screen::divergence::NO_DECODER;
use crate::screen::tiles::TileSize;
use crate::texture::SceneTextures;

/// The default sampling interval of camera paths (seconds).
pub const DEFAULT_INTERVAL: f32 = 0.5;

/// The default recording size when the scene does not give one (`neurotex render`'s).
pub const DEFAULT_SIZE: (u32, u32) = (1280, 720);

/// The most views one record is made from (a bound on a path's duration over Δt).
pub const MAX_VIEWS: usize = 100_000;

/// How a scene's views are recorded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecordSettings {
    /// Output size in pixels.
    pub size: (u32, u32),
    /// Screen tile (the decode pass's).
    pub tile: TileSize,
    /// Seconds between two samples of a camera path (> 0).
    pub interval: f32,
}

impl RecordSettings {
    /// The defaults for `opened`: its `[render] size` (else [`DEFAULT_SIZE`]), 8×8 tiles,
    /// [`DEFAULT_INTERVAL`].
    pub fn for_scene(opened: &OpenedScene) -> Self {
        Self {
            size: opened
                .description
                .render
                .size
                .map_or(DEFAULT_SIZE, |[w, h]| (w, h)),
            tile: TileSize::default(),
            interval: DEFAULT_INTERVAL,
        }
    }
}

/// The views of `opened` (given as `scene`, named in errors): every camera path sampled
/// at 0, Δt, 2Δt, … up to its duration (times from the path's start); without paths, the
/// glTF's cameras, or the scene's default camera when it has none.
pub fn scene_views(
    opened: &OpenedScene,
    scene: &Path,
    interval: f32,
) -> Result<Vec<(ViewSpec, Camera)>, PackageError> {
    let bad = |reason: String| PackageError::Views {
        scene: scene.to_path_buf(),
        reason,
    };
    if !(interval.is_finite() && interval > 0.0) {
        return Err(bad(format!(
            "the sampling interval {interval} s is not a positive number"
        )));
    }
    let paths = &opened.description.camera_paths;
    if paths.is_empty() {
        let cameras = if opened.scene.cameras.is_empty() {
            vec![select_camera(opened, None)?]
        } else {
            opened.scene.cameras.clone()
        };
        return Ok(cameras
            .into_iter()
            .map(|c| {
                let spec = ViewSpec::Camera {
                    name: c.name.clone(),
                    position: c.position.into(),
                    forward: c.forward.into(),
                    yfov: c.yfov,
                };
                (spec, c)
            })
            .collect());
    }
    let mut views = Vec::new();
    for path in paths {
        let samples = (f64::from(path.duration()) / f64::from(interval)).floor() + 1.0;
        if samples + views.len() as f64 > MAX_VIEWS as f64 {
            return Err(bad(format!(
                "camera path `{}` ({} s) sampled every {interval} s gives more than {MAX_VIEWS} views",
                path.name,
                path.duration()
            )));
        }
        let start = path.keys.first().map_or(0.0, |k| k.time);
        for k in 0..samples as usize {
            let time = k as f32 * interval;
            if let Some(camera) = path.sample(start + time) {
                let spec = ViewSpec::PathSample {
                    path: path.name.clone(),
                    time,
                };
                views.push((spec, camera));
            }
        }
    }
    Ok(views)
}

/// Digests of the files `opened` was read from (given as `scene`): the argument itself,
/// the glTF it names (when another file), the glTF's buffer files and the base colour
/// images of alpha-tested and alpha-blended materials (their alpha decides which
/// material covers a pixel), in that order.
pub fn scene_files(opened: &OpenedScene, scene: &Path) -> Result<Vec<FileDigest>, PackageError> {
    let gltf = &opened.scene.source;
    let mut files = vec![scene.to_path_buf()];
    if gltf != scene {
        files.push(gltf.clone());
    }
    files.extend(opened.scene.buffers.iter().cloned());
    for m in &opened.scene.materials {
        if m.alpha_mode == crate::scene::AlphaMode::Opaque {
            continue;
        }
        if let Some(crate::scene::TextureRef {
            image: crate::scene::ImageSource::File(path),
            ..
        }) = &m.textures.base_color
            && !files.contains(path)
        {
            files.push(path.clone());
        }
    }
    let mut digests = Vec::with_capacity(files.len());
    for file in files {
        digests.push(FileDigest::of(&file, &file.display().to_string())?);
    }
    Ok(digests)
}

/// The source a record of `opened` (given as `scene`) made with `settings` has, and the
/// cameras of its views in order. Reads the scene's files (digests) but decodes nothing.
pub fn expected_source(
    opened: &OpenedScene,
    scene: &Path,
    settings: &RecordSettings,
) -> Result<(RecordSource, Vec<Camera>), PackageError> {
    let (descs, _) = crate::texture::scene_texture_sets(&opened.scene.materials);
    let (specs, cameras) = scene_views(opened, scene, settings.interval)?
        .into_iter()
        .unzip();
    let source = RecordSource {
        scene: scene.display().to_string(),
        scene_files: scene_files(opened, scene)?,
        set_names: crate::texture::set::unique_names(&descs),
        tile: settings.tile,
        size: [settings.size.0, settings.size.1],
        views: specs,
    };
    Ok((source, cameras))
}

/// Render the G-buffer of every camera of `cameras` (one per `source.views`) with
/// `renderer` (whose size must be `source.size`) and count its tiles on the GPU;
/// `progress(done, views)` after each view.
pub fn record_views(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    source: RecordSource,
    cameras: &[Camera],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<CooccurrenceRecord, PackageError> {
    let size = (source.size[0], source.size[1]);
    if renderer.size() != size || cameras.len() != source.views.len() {
        return Err(PackageError::Gpu(GpuError::Validation(format!(
            "recording {} views at {}×{} with a {}×{} renderer and {} cameras",
            source.views.len(),
            size.0,
            size.1,
            renderer.size().0,
            renderer.size().1,
            cameras.len()
        ))));
    }
    let set_map: Vec<u32> = renderer
        .scene
        .material_sets
        .iter()
        .map(|s| s.map_or(NO_DECODER, |s| s as u32))
        .collect();
    let set_map = DecoderMap::new(&ctx.device, "cooccurrence.set_map", &set_map);
    let pass = CooccurrencePass::new(ctx, source.tile)?;
    let signatures = SignatureBuffer::new(ctx, source.tile, size)?;
    let profiler = GpuProfiler::new(ctx);
    let mut views = Vec::with_capacity(cameras.len());
    for (k, camera) in cameras.iter().enumerate() {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("cooccurrence.view"),
            });
        ctx.error_scope(|| {
            renderer.record_gbuffer(ctx, &mut encoder, camera, &profiler);
            let inputs = CooccurrenceInputs {
                material_ids: &renderer.targets().gbuffer.material,
                set_map: &set_map,
            };
            pass.record(
                &mut crate::gpu::encoder::FrameEncoder::new(ctx, &mut encoder, &profiler),
                &inputs,
                &signatures,
            )
        })??;
        ctx.queue.submit([encoder.finish()]);
        views.push(ViewCounts::from_histogram(signatures.read_histogram(ctx)?));
        progress(k + 1, cameras.len());
    }
    Ok(CooccurrenceRecord::new(source, views)?)
}

/// The record in `file` when it exists, reads as a record and was made from `expected`;
/// `None` otherwise (a damaged or stale file is logged and left for recording anew).
pub fn reusable(file: &Path, expected: &RecordSource) -> Option<CooccurrenceRecord> {
    if !file.is_file() {
        return None;
    }
    match CooccurrenceRecord::read(file).and_then(|r| r.check_source(expected, file).map(|_| r)) {
        Ok(record) => Some(record),
        Err(e) => {
            log::info!("recording the co-occurrence again: {e}");
            None
        }
    }
}

/// A record and whether it was read from its file rather than recorded.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The record.
    pub record: CooccurrenceRecord,
    /// True when `file` already held it.
    pub reused: bool,
}

/// The co-occurrence record of `opened` (given as `scene`) under `settings`: `file`'s
/// when it is [`reusable`], else recorded with a renderer over `textures` (the scene's
/// decoded sets) and written to `file` (temporary file and rename).
pub fn load_or_record(
    ctx: &GpuContext,
    opened: &OpenedScene,
    scene: &Path,
    textures: &SceneTextures,
    settings: &RecordSettings,
    file: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Recorded, PackageError> {
    let (source, cameras) = expected_source(opened, scene, settings)?;
    if let Some(record) = reusable(file, &source) {
        return Ok(Recorded {
            record,
            reused: true,
        });
    }
    let mut renderer = Renderer::new(
        ctx,
        &opened.scene,
        textures,
        Some(1),
        settings.size,
        crate::render::headless::OUTPUT_FORMAT,
    )?;
    let record = record_views(ctx, &mut renderer, source, &cameras, progress)?;
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| ClusterError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    record.write(file)?;
    Ok(Recorded {
        record,
        reused: false,
    })
}
