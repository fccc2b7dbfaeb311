//! glTF 2.0 import (`.gltf` with external or data-URI buffers, and `.glb`).
//!
//! Produces a [`Scene`]: meshes with `u32` indices whatever the source width, node
//! transforms flattened into [`Instance`]s, PBR metallic-roughness materials with their
//! texture references (images are *referenced*, not decoded), and cameras. Vertex
//! attributes may be `KHR_mesh_quantization` integers (`read_floats`). Tangents are
//! generated with MikkTSpace where the file has none. Every failure is a [`SceneError`]
//! that names the file.
//!
//! Untrusted files: the document is checked by [`gltf_validate`]
//! before any reader of the `gltf` crate runs, buffer and image URIs must stay inside the
//! glTF's folder (or a folder the [`UriPolicy`] adds), vertex data must be finite, and a
//! panic that still escapes the `gltf` crate is caught and reported as an error naming the
//! file ([`from_slice`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine as _;
use glam::{Mat3, Mat4, Vec3};
use gltf::mesh::Mode;

use super::{
    Aabb, AlphaMode, Camera, Filter, ImageSource, Instance, Material, MaterialTextures, Mesh,
    MipFilter, Primitive, Result, Sampling, Scene, SceneError, TextureRef, TextureTransform,
    Vertex, WrapMode, gltf_validate, tangents,
};

/// glTF extensions the importer understands. A file that *requires* any other one is
/// rejected with [`SceneError::UnsupportedExtension`].
pub const SUPPORTED_REQUIRED_EXTENSIONS: &[&str] = &[
    "KHR_texture_transform",
    "KHR_materials_emissive_strength",
    "KHR_texture_basisu",
    "MSFT_texture_dds",
    "EXT_texture_webp",
    gltf_validate::MESH_QUANTIZATION,
];

/// Where a glTF's buffer and image URIs may point: relative paths that stay inside the
/// glTF's folder, or inside one of `extra_roots` (a scene description's `asset_folders`).
/// Links are resolved before the check. URIs with a scheme other than `data:` are refused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UriPolicy {
    /// Folders besides the glTF's own that URIs may name.
    pub extra_roots: Vec<PathBuf>,
    /// Accept any path (`--allow-outside-uris`).
    pub anywhere: bool,
}

/// Process-wide switch behind `--allow-outside-uris`: every import then accepts URIs
/// that leave the scene's folder.
static ALLOW_OUTSIDE_URIS: AtomicBool = AtomicBool::new(false);

/// Let every later import of this process accept URIs outside the scene's folder (the
/// command line's `--allow-outside-uris`).
pub fn allow_outside_uris(allow: bool) {
    ALLOW_OUTSIDE_URIS.store(allow, Ordering::Relaxed);
}

impl UriPolicy {
    /// The file `uri` (already percent-decoded) names, seen from `base_dir`, or why it
    /// is refused. `at` is the JSON path of the URI, for the message.
    pub fn resolve(
        &self,
        uri: &str,
        base_dir: &Path,
        at: &str,
    ) -> std::result::Result<PathBuf, String> {
        if let Some(scheme) = uri_scheme(uri) {
            return Err(format!(
                "{at}: URI scheme `{scheme}:` is not supported (relative paths and data: URIs only)"
            ));
        }
        let path = base_dir.join(uri);
        if self.admits(&path, base_dir) {
            Ok(path)
        } else {
            Err(format!(
                "{at}: `{uri}` points outside the scene's folder {} (to {}); list its folder in the scene description's `asset_folders` or pass --allow-outside-uris",
                crate::outputs::resolve(base_dir).display(),
                crate::outputs::resolve(&path).display()
            ))
        }
    }

    /// Whether the file `path` may be read by a file in the folder `base_dir` (`""` is
    /// the current folder): it lies inside `base_dir` or an extra root once links and
    /// `..` are resolved, or any path is allowed.
    pub fn admits(&self, path: &Path, base_dir: &Path) -> bool {
        if self.anywhere || ALLOW_OUTSIDE_URIS.load(Ordering::Relaxed) {
            return true;
        }
        let target = crate::outputs::resolve(path);
        std::iter::once(base_dir)
            .chain(self.extra_roots.iter().map(PathBuf::as_path))
            .map(crate::outputs::resolve)
            .any(|root| target.starts_with(root))
    }
}

/// The scheme of an absolute URI (`file`, `http`, ...), if it has one (`data` included).
fn uri_scheme(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && scheme.len() > 1
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)))
    .then_some(scheme)
}

/// Load a `.gltf` or `.glb` file; URIs must stay inside its folder.
pub fn load(path: &Path) -> Result<Scene> {
    load_with(path, &UriPolicy::default())
}

/// Load a `.gltf` or `.glb` file with the given URI policy.
pub fn load_with(path: &Path, policy: &UriPolicy) -> Result<Scene> {
    let bytes = crate::io::read_file(path, |path, source| SceneError::Io { path, source })?;
    from_slice(&bytes, path, policy)
}

/// Import a glTF or GLB document from `bytes`, as if read from `path` (whose folder
/// external URIs are resolved against). Never panics: a panic inside the `gltf` crate
/// that validation did not foresee becomes a [`SceneError::Malformed`] naming `path`.
pub fn from_slice(bytes: &[u8], path: &Path, policy: &UriPolicy) -> Result<Scene> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| import(bytes, path, policy))) {
        Ok(result) => result,
        Err(payload) => Err(SceneError::Malformed {
            path: path.to_path_buf(),
            reason: format!(
                "the glTF reader failed on this file ({}); the file is malformed",
                panic_message(payload.as_ref())
            ),
        }),
    }
}

/// The text of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic without a message".to_string()
    }
}

fn import(bytes: &[u8], path: &Path, policy: &UriPolicy) -> Result<Scene> {
    let malformed = |reason: String| SceneError::Malformed {
        path: path.to_path_buf(),
        reason,
    };
    // Parse without validation (the crate's validation and readers assume checks that
    // `gltf_validate` makes first), naming an unsupported required extension precisely.
    gltf_validate::check_glb_header(bytes).map_err(malformed)?;
    let gltf::Gltf { document, blob } =
        gltf::Gltf::from_slice_without_validation(bytes).map_err(|e| malformed(e.to_string()))?;
    for ext in document.extensions_required() {
        if !SUPPORTED_REQUIRED_EXTENSIONS.contains(&ext) {
            return Err(SceneError::UnsupportedExtension {
                path: path.to_path_buf(),
                extension: ext.to_string(),
            });
        }
    }
    gltf_validate::validate(document.as_json()).map_err(malformed)?;
    let base_dir = path.parent().unwrap_or(Path::new("."));
    let (buffers, buffer_files) = load_buffers(path, base_dir, &document, blob, policy)?;
    let mut importer = Importer {
        document: &document,
        path,
        base_dir,
        policy,
        buffers: &buffers,
        warnings: Vec::new(),
        image_sources: HashMap::new(),
    };
    let mut materials = document
        .materials()
        .map(|m| importer.material(&m))
        .collect::<Result<Vec<_>>>()?;
    let default_material = materials.len();
    let mut uses_default = false;
    let mut meshes = Vec::new();
    for mesh in document.meshes() {
        let mut primitives = Vec::new();
        for prim in mesh.primitives() {
            let material = match prim.material().index() {
                Some(i) => i,
                None => {
                    uses_default = true;
                    default_material
                }
            };
            if let Some(p) = importer.primitive(&mesh, &prim, material, &materials)? {
                primitives.push(p);
            }
        }
        meshes.push(Mesh {
            name: mesh
                .name()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("mesh{}", mesh.index())),
            primitives,
        });
    }
    if uses_default {
        materials.push(Material {
            name: "default".into(),
            ..Material::default()
        });
    }

    let mut instances = Vec::new();
    let mut cameras = Vec::new();
    let roots: Vec<gltf::Node> = match document
        .default_scene()
        .or_else(|| document.scenes().next())
    {
        Some(scene) => scene.nodes().collect(),
        None => document.nodes().collect(),
    };
    let mut stack: Vec<(gltf::Node, Mat4, usize)> =
        roots.into_iter().map(|n| (n, Mat4::IDENTITY, 0)).collect();
    while let Some((node, parent, depth)) = stack.pop() {
        if depth > 256 {
            return Err(malformed(
                "node hierarchy deeper than 256 levels (a cycle?)".into(),
            ));
        }
        let local = Mat4::from_cols_array_2d(&node.transform().matrix());
        let world = parent * local;
        if let Some(mesh) = node.mesh() {
            instances.push(Instance {
                mesh: mesh.index(),
                world_from_local: world,
            });
        }
        if let Some(cam) = node.camera() {
            match cam.projection() {
                gltf::camera::Projection::Perspective(p) => {
                    let forward = world.transform_vector3(-Vec3::Z).normalize_or(-Vec3::Z);
                    cameras.push(Camera {
                        name: cam
                            .name()
                            .or(node.name())
                            .map(str::to_owned)
                            .unwrap_or_else(|| format!("camera{}", cameras.len())),
                        position: world.transform_point3(Vec3::ZERO),
                        forward,
                        yfov: p.yfov(),
                        znear: p.znear().max(1e-4),
                    });
                }
                gltf::camera::Projection::Orthographic(_) => importer
                    .warnings
                    .push(format!("orthographic camera {} ignored", cam.index())),
            }
        }
        for child in node.children() {
            stack.push((child, world, depth + 1));
        }
    }
    // Node order is depth-first but reversed by the stack; keep the file's camera order.
    cameras.reverse();

    let mut bounds = Aabb::EMPTY;
    let local_bounds: Vec<Aabb> = meshes
        .iter()
        .map(|m| {
            let mut b = Aabb::EMPTY;
            for p in &m.primitives {
                for v in &p.vertices {
                    b.extend(Vec3::from(v.position));
                }
            }
            b
        })
        .collect();
    for inst in &instances {
        let b = local_bounds[inst.mesh];
        if b.is_empty() {
            continue;
        }
        for i in 0..8 {
            let corner = Vec3::new(
                if i & 1 == 0 { b.min.x } else { b.max.x },
                if i & 2 == 0 { b.min.y } else { b.max.y },
                if i & 4 == 0 { b.min.z } else { b.max.z },
            );
            bounds.extend(inst.world_from_local.transform_point3(corner));
        }
    }
    if bounds.is_empty() {
        bounds = Aabb {
            min: Vec3::splat(-1.0),
            max: Vec3::splat(1.0),
        };
    }
    let warnings = importer.warnings;
    for w in &warnings {
        log::warn!("{}: {w}", path.display());
    }
    Ok(Scene {
        source: path.to_path_buf(),
        meshes,
        instances,
        materials,
        cameras,
        bounds,
        warnings,
        buffers: buffer_files,
    })
}

/// Resolve every buffer: the GLB binary chunk, a data URI or a file next to the glTF.
/// Also returns the files read.
fn load_buffers(
    path: &Path,
    base_dir: &Path,
    document: &gltf::Document,
    mut blob: Option<Vec<u8>>,
    policy: &UriPolicy,
) -> Result<(Vec<Vec<u8>>, Vec<PathBuf>)> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    for buffer in document.buffers() {
        let data = match buffer.source() {
            gltf::buffer::Source::Bin => blob.take().ok_or_else(|| SceneError::Malformed {
                path: path.to_path_buf(),
                reason: format!(
                    "buffer {} refers to a GLB binary chunk that is missing",
                    buffer.index()
                ),
            })?,
            gltf::buffer::Source::Uri(uri) => {
                if let Some(data) = decode_data_uri(uri) {
                    data.map_err(|reason| SceneError::Malformed {
                        path: path.to_path_buf(),
                        reason: format!("buffer {}: {reason}", buffer.index()),
                    })?
                } else {
                    let file = policy
                        .resolve(
                            &percent_decode(uri),
                            base_dir,
                            &format!("buffers[{}].uri", buffer.index()),
                        )
                        .map_err(|reason| SceneError::Malformed {
                            path: path.to_path_buf(),
                            reason,
                        })?;
                    let data = crate::io::read_file(&file, |path, source| SceneError::Io {
                        path,
                        source,
                    })?;
                    files.push(file);
                    data
                }
            }
        };
        if data.len() < buffer.length() {
            return Err(SceneError::Malformed {
                path: path.to_path_buf(),
                reason: format!(
                    "buffer {} holds {} bytes but declares byteLength {} (truncated?)",
                    buffer.index(),
                    data.len(),
                    buffer.length()
                ),
            });
        }
        out.push(data);
    }
    Ok((out, files))
}

/// Decode a `data:` URI. `None` when `uri` is not a data URI.
fn decode_data_uri(uri: &str) -> Option<std::result::Result<Vec<u8>, String>> {
    let rest = uri.strip_prefix("data:")?;
    let Some((header, payload)) = rest.split_once(',') else {
        return Some(Err("data URI without a ',' separator".into()));
    };
    if header.ends_with(";base64") {
        Some(
            base64::engine::general_purpose::STANDARD
                .decode(payload)
                .map_err(|e| format!("invalid base64 in data URI: {e}")),
        )
    } else {
        Some(Ok(percent_decode(payload).into_bytes()))
    }
}

/// Decode `%XX` escapes of a relative URI.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

struct Importer<'a> {
    document: &'a gltf::Document,
    path: &'a Path,
    base_dir: &'a Path,
    policy: &'a UriPolicy,
    buffers: &'a [Vec<u8>],
    warnings: Vec<String>,
    image_sources: HashMap<usize, ImageSource>,
}

impl Importer<'_> {
    fn malformed(&self, reason: String) -> SceneError {
        SceneError::Malformed {
            path: self.path.to_path_buf(),
            reason,
        }
    }

    fn image(&mut self, image: gltf::Image) -> Result<ImageSource> {
        if let Some(s) = self.image_sources.get(&image.index()) {
            return Ok(s.clone());
        }
        let name = format!("{}#image{}", self.path.display(), image.index());
        let source = match image.source() {
            gltf::image::Source::View { view, .. } => {
                let buf = &self.buffers[view.buffer().index()];
                let end = view.offset().checked_add(view.length());
                let bytes = end
                    .and_then(|end| buf.get(view.offset()..end))
                    .ok_or_else(|| {
                        self.malformed(format!(
                            "image {} buffer view {} lies outside its buffer",
                            image.index(),
                            view.index()
                        ))
                    })?;
                ImageSource::Embedded {
                    name,
                    bytes: Arc::from(bytes),
                }
            }
            gltf::image::Source::Uri { uri, .. } => match decode_data_uri(uri) {
                Some(data) => ImageSource::Embedded {
                    name,
                    bytes: Arc::from(
                        data.map_err(|r| self.malformed(format!("image {}: {r}", image.index())))?,
                    ),
                },
                None => ImageSource::File(
                    self.policy
                        .resolve(
                            &percent_decode(uri),
                            self.base_dir,
                            &format!("images[{}].uri", image.index()),
                        )
                        .map_err(|r| self.malformed(r))?,
                ),
            },
        };
        self.image_sources.insert(image.index(), source.clone());
        Ok(source)
    }

    fn texture_ref(&mut self, texture: gltf::Texture, tex_coord: u32) -> Result<TextureRef> {
        // `gltf_validate` checked that every texture has a source, core or extension,
        // naming an image that exists.
        let image = texture
            .source()
            .or_else(|| {
                gltf_validate::IMAGE_SOURCE_EXTENSIONS
                    .iter()
                    .find_map(|ext| {
                        let index = texture.extension_value(ext)?.get("source")?.as_u64()?;
                        self.document.images().nth(usize::try_from(index).ok()?)
                    })
            })
            .ok_or_else(|| self.malformed(format!("texture {} has no image", texture.index())))?;
        Ok(TextureRef {
            image: self.image(image)?,
            tex_coord,
        })
    }

    fn material<'g>(&mut self, m: &gltf::Material<'g>) -> Result<Material> {
        let name = m
            .name()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("material{}", m.index().unwrap_or(0)));
        let pbr = m.pbr_metallic_roughness();
        let mut textures = MaterialTextures::default();
        let mut uv_transform = None;
        let mut note_transform = |t: Option<gltf::texture::TextureTransform>,
                                  warnings: &mut Vec<String>| {
            let t = t.map(|t| TextureTransform {
                offset: t.offset(),
                rotation: t.rotation(),
                scale: t.scale(),
            });
            let t = t.unwrap_or_default();
            match uv_transform {
                None => uv_transform = Some(t),
                Some(prev) if prev != t => warnings.push(format!(
                    "material {name}: texture slots use different KHR_texture_transform; the first slot's is used"
                )),
                Some(_) => {}
            }
        };
        // Each slot in glTF's order: its name, texture, UV set and, for the slots that
        // carry one, KHR_texture_transform.
        // KHR_texture_transform's texCoord, where given, replaces the slot's.
        let info = |i: gltf::texture::Info<'g>| {
            let transform = i.texture_transform();
            let tex_coord = transform
                .as_ref()
                .and_then(|t| t.tex_coord())
                .unwrap_or(i.tex_coord());
            (i.texture(), tex_coord, Some(transform))
        };
        let slots = [
            (
                "base colour",
                &mut textures.base_color,
                pbr.base_color_texture().map(info),
            ),
            (
                "normal",
                &mut textures.normal,
                m.normal_texture()
                    .map(|n| (n.texture(), n.tex_coord(), None)),
            ),
            (
                "metallic-roughness",
                &mut textures.metallic_roughness,
                pbr.metallic_roughness_texture().map(info),
            ),
            (
                "occlusion",
                &mut textures.occlusion,
                m.occlusion_texture()
                    .map(|o| (o.texture(), o.tex_coord(), None)),
            ),
            (
                "emissive",
                &mut textures.emissive,
                m.emissive_texture().map(info),
            ),
        ];
        // A texture set is sampled with one UV set: the first texture's. A slot on another
        // (an occlusion map on a lightmap's TEXCOORD_1, say) would be read at the wrong
        // places, so it is left out, as if the material had none.
        let mut uv_set = None;
        // The first texture's sampling (and which slot it is): the set's.
        let mut sampling = None;
        for (what, slot, found) in slots {
            let Some((texture, tex_coord, transform)) = found else {
                continue;
            };
            let set = *uv_set.get_or_insert(tex_coord);
            if tex_coord != set {
                self.warnings.push(format!(
                    "material {name}: its {what} texture samples TEXCOORD_{tex_coord}, its other textures TEXCOORD_{set}; it is left out (a texture set is sampled with one UV set)"
                ));
                continue;
            }
            if let Some(t) = transform {
                note_transform(t, &mut self.warnings);
            }
            let texture_sampling = sampling_of(&texture.sampler());
            let first = *sampling.get_or_insert((what, texture_sampling));
            if first.1 != texture_sampling {
                self.warnings.push(format!(
                    "material {name}: its {what} texture samples with {}, its {} texture with {}; all its textures sample as the {} one (a texture set is sampled one way)",
                    describe_sampling(&texture_sampling),
                    first.0,
                    describe_sampling(&first.1),
                    first.0
                ));
            }
            *slot = Some(self.texture_ref(texture, tex_coord)?);
        }
        let occlusion_from_arm = match &textures.metallic_roughness {
            Some(mr) => arm_packed(&mr.image, textures.occlusion.as_ref().map(|o| &o.image)),
            None => false,
        };
        let strength = m.emissive_strength().unwrap_or(1.0);
        let e = m.emissive_factor();
        Ok(Material {
            base_color_factor: pbr.base_color_factor(),
            metallic_factor: pbr.metallic_factor(),
            roughness_factor: pbr.roughness_factor(),
            emissive_factor: [e[0] * strength, e[1] * strength, e[2] * strength],
            normal_scale: m.normal_texture().map(|n| n.scale()).unwrap_or(1.0),
            occlusion_strength: m.occlusion_texture().map(|o| o.strength()).unwrap_or(1.0),
            alpha_mode: match m.alpha_mode() {
                gltf::material::AlphaMode::Opaque => AlphaMode::Opaque,
                gltf::material::AlphaMode::Mask => AlphaMode::Mask {
                    cutoff: m.alpha_cutoff().unwrap_or(0.5),
                },
                gltf::material::AlphaMode::Blend => AlphaMode::Blend,
            },
            double_sided: m.double_sided(),
            uv_transform: uv_transform.unwrap_or_default(),
            textures,
            occlusion_from_arm,
            sampling: sampling.map(|(_, s)| s).unwrap_or_default(),
            name,
        })
    }

    fn primitive(
        &mut self,
        mesh: &gltf::Mesh,
        prim: &gltf::Primitive,
        material: usize,
        materials: &[Material],
    ) -> Result<Option<Primitive>> {
        let what = || format!("mesh {} primitive {}", mesh.index(), prim.index());
        let mode = prim.mode();
        if !matches!(
            mode,
            Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan
        ) {
            self.warnings.push(format!(
                "{}: mode {mode:?} is not drawn (triangles only)",
                what()
            ));
            return Ok(None);
        }
        let buffers = self.buffers;
        let reader = prim.reader(|b| buffers.get(b.index()).map(|v| v.as_slice()));
        let attribute = |semantic| prim.get(&semantic);
        let positions: Vec<[f32; 3]> = attribute(gltf::Semantic::Positions)
            .and_then(|a| read_floats(a, buffers))
            .ok_or_else(|| self.malformed(format!("{} has no POSITION attribute", what())))?;
        let accessor_of = |semantic| attribute(semantic).map_or(usize::MAX, |a| a.index());
        let finite = |values: &mut dyn Iterator<Item = &[f32]>, semantic: gltf::Semantic| {
            let name = semantic.to_string();
            match values
                .enumerate()
                .find(|(_, v)| v.iter().any(|x| !x.is_finite()))
            {
                None => Ok(()),
                Some((i, v)) => Err(self.malformed(format!(
                    "accessors[{}] ({} {name}) element {i}: {v:?} is not finite",
                    accessor_of(semantic),
                    what()
                ))),
            }
        };
        finite(
            &mut positions.iter().map(|p| &p[..]),
            gltf::Semantic::Positions,
        )?;
        let n = positions.len();
        let check_len = |len: usize, attr: &str| {
            if len != n {
                Err(self.malformed(format!(
                    "{}: {attr} has {len} elements but POSITION has {n}",
                    what()
                )))
            } else {
                Ok(())
            }
        };
        let indices: Vec<u32> = match reader.read_indices() {
            Some(ix) => ix.into_u32().collect(),
            None => (0..n as u32).collect(),
        };
        // Validation checked every accessor's extent, so the readers return everything.
        if let Some(a) = prim.indices()
            && a.count() != indices.len()
        {
            return Err(self.malformed(format!(
                "{}: indices accessor {} yielded {} of its {} indices",
                what(),
                a.index(),
                indices.len(),
                a.count()
            )));
        }
        if let Some(bad) = indices.iter().find(|&&i| i as usize >= n) {
            return Err(self.malformed(format!(
                "{}: index {bad} out of range for {n} vertices",
                what()
            )));
        }
        let indices = triangle_list(mode, indices);
        if indices.is_empty() {
            self.warnings
                .push(format!("{}: {mode:?} of fewer than 3 vertices", what()));
            return Ok(None);
        }
        let normals: Vec<[f32; 3]> =
            match attribute(gltf::Semantic::Normals).and_then(|a| read_floats(a, buffers)) {
                Some(v) => {
                    check_len(v.len(), "NORMAL")?;
                    finite(&mut v.iter().map(|p| &p[..]), gltf::Semantic::Normals)?;
                    v
                }
                None => tangents::vertex_normals(&positions, &indices),
            };
        // The UV set the material's textures sample.
        let uv_set = materials.get(material).map_or(0, |m| m.textures.uv_set());
        let uv_semantic = gltf::Semantic::TexCoords(uv_set);
        let uvs: Vec<[f32; 2]> =
            match attribute(uv_semantic.clone()).and_then(|a| read_floats(a, buffers)) {
                Some(v) => {
                    check_len(v.len(), &uv_semantic.to_string())?;
                    finite(&mut v.iter().map(|p| &p[..]), uv_semantic)?;
                    v
                }
                None => vec![[0.0, 0.0]; n],
            };
        let missing_uvs = attribute(gltf::Semantic::TexCoords(uv_set)).is_none()
            && materials
                .get(material)
                .is_some_and(|m| m.textures.present().next().is_some());
        let file_tangents: Option<Vec<[f32; 4]>> =
            match attribute(gltf::Semantic::Tangents).and_then(|a| read_floats(a, buffers)) {
                Some(v) => {
                    check_len(v.len(), "TANGENT")?;
                    finite(&mut v.iter().map(|p| &p[..]), gltf::Semantic::Tangents)?;
                    Some(v)
                }
                None => None,
            };
        let mut vertices: Vec<Vertex> = (0..n)
            .map(|i| Vertex {
                position: positions[i],
                normal: Vec3::from(normals[i]).normalize_or(Vec3::Y).into(),
                tangent: file_tangents
                    .as_ref()
                    .map_or([1.0, 0.0, 0.0, 1.0], |t| t[i]),
                uv: uvs[i],
            })
            .collect();
        if missing_uvs {
            self.warnings.push(format!(
                "{}: its material's textures sample TEXCOORD_{uv_set}, which it does not have; they are read at one texel",
                what()
            ));
        }
        if prim.get(&gltf::Semantic::Colors(0)).is_some() {
            self.warnings
                .push(format!("{}: vertex colours (COLOR_0) are not used", what()));
        }
        if prim.morph_targets().next().is_some() {
            self.warnings.push(format!(
                "{}: morph targets are not applied (the base shape is drawn)",
                what()
            ));
        }
        let mut indices = indices;
        let needs_tangents = file_tangents.is_none()
            && materials
                .get(material)
                .is_some_and(|m| m.textures.normal.is_some());
        if needs_tangents {
            (vertices, indices) = tangents::generate(&vertices, &indices);
        } else if file_tangents.is_none() {
            tangents::fill_arbitrary(&mut vertices);
        }
        Ok(Some(Primitive {
            vertices,
            indices,
            material,
        }))
    }
}

/// The normal matrix (inverse transpose of the upper 3×3) of an object → world transform.
pub fn normal_matrix(world_from_local: &Mat4) -> Mat3 {
    Mat3::from_mat4(*world_from_local).inverse().transpose()
}

/// The sampling a glTF sampler asks for; an absent filter is linear (trilinear with
/// mips).
fn sampling_of(sampler: &gltf::texture::Sampler<'_>) -> Sampling {
    use gltf::texture::{MagFilter, MinFilter, WrappingMode as W};
    let wrap = |mode| match mode {
        W::Repeat => WrapMode::Repeat,
        W::ClampToEdge => WrapMode::ClampToEdge,
        W::MirroredRepeat => WrapMode::MirroredRepeat,
    };
    let (min, mipmap) = match sampler.min_filter() {
        None | Some(MinFilter::LinearMipmapLinear) => (Filter::Linear, MipFilter::Linear),
        Some(MinFilter::Nearest) => (Filter::Nearest, MipFilter::Off),
        Some(MinFilter::Linear) => (Filter::Linear, MipFilter::Off),
        Some(MinFilter::NearestMipmapNearest) => (Filter::Nearest, MipFilter::Nearest),
        Some(MinFilter::LinearMipmapNearest) => (Filter::Linear, MipFilter::Nearest),
        Some(MinFilter::NearestMipmapLinear) => (Filter::Nearest, MipFilter::Linear),
    };
    Sampling {
        wrap: [wrap(sampler.wrap_s()), wrap(sampler.wrap_t())],
        mag: match sampler.mag_filter() {
            Some(MagFilter::Nearest) => Filter::Nearest,
            None | Some(MagFilter::Linear) => Filter::Linear,
        },
        min,
        mipmap,
    }
}

/// `sampling` in glTF's words: `S CLAMP_TO_EDGE, T REPEAT, mag NEAREST, min
/// LINEAR_MIPMAP_LINEAR`.
fn describe_sampling(sampling: &Sampling) -> String {
    let wrap = |w: WrapMode| match w {
        WrapMode::Repeat => "REPEAT",
        WrapMode::ClampToEdge => "CLAMP_TO_EDGE",
        WrapMode::MirroredRepeat => "MIRRORED_REPEAT",
    };
    let filter = |f: Filter| match f {
        Filter::Nearest => "NEAREST",
        Filter::Linear => "LINEAR",
    };
    let mipmap = match sampling.mipmap {
        MipFilter::Linear => "_MIPMAP_LINEAR",
        MipFilter::Nearest => "_MIPMAP_NEAREST",
        MipFilter::Off => "",
    };
    format!(
        "S {}, T {}, mag {}, min {}{mipmap}",
        wrap(sampling.wrap[0]),
        wrap(sampling.wrap[1]),
        filter(sampling.mag),
        filter(sampling.min)
    )
}

/// Heuristic for ARM/ORM packing (occlusion in the R channel of the metallic-roughness
/// image), used to set [`Material::occlusion_from_arm`]: true when the
/// occlusion slot names the same image as `mr` (ORM, as in FlightHelmet), or when there is
/// no occlusion slot and `mr`'s stem holds an `arm`/`orm` token after an underscore
/// (`_arm_`, `_arm.`, ending in `_arm`; case-insensitive) or spells out
/// `OcclusionRoughMetal`/`OcclusionRoughnessMetallic`.
pub fn arm_packed(mr: &ImageSource, occlusion: Option<&ImageSource>) -> bool {
    match occlusion {
        Some(occ) => occ == mr,
        None => {
            let stem = mr.stem().to_lowercase();
            stem.contains("occlusionroughmetal")
                || stem.contains("occlusionroughnessmetallic")
                || stem
                    .split(['_', '.'])
                    .skip(1)
                    .any(|t| t == "arm" || t == "orm")
        }
    }
}

/// The triangle list of a primitive's `indices` in `mode` (triangles, or a strip or fan
/// unrolled as glTF defines them: strip triangle i is (i, i + 1 + i % 2, i + 2 − i % 2),
/// fan triangle i is (i + 1, i + 2, 0), so every triangle keeps the strip's or fan's
/// winding). Other modes give no triangles.
fn triangle_list(mode: gltf::mesh::Mode, indices: Vec<u32>) -> Vec<u32> {
    let triangles = indices.len().saturating_sub(2);
    match mode {
        Mode::Triangles => indices,
        Mode::TriangleStrip => (0..triangles)
            .flat_map(|i| [i, i + 1 + i % 2, i + 2 - i % 2])
            .map(|k| indices[k])
            .collect(),
        Mode::TriangleFan => (0..triangles)
            .flat_map(|i| [i + 1, i + 2, 0])
            .map(|k| indices[k])
            .collect(),
        _ => Vec::new(),
    }
}

/// The elements of a float vertex attribute as `f32`, whatever its component type: `f32`,
/// and the 8- and 16-bit integers of normalised texture coordinates and of
/// `KHR_mesh_quantization` (validated per semantic by [`gltf_validate`]). Normalised
/// integers map as glTF specifies (unsigned `c / max`, signed `max(c / max, −1)`), others
/// convert as they are. `None` for a `u32` accessor or one whose data is missing.
fn read_floats<const N: usize>(
    accessor: gltf::Accessor<'_>,
    buffers: &[Vec<u8>],
) -> Option<Vec<[f32; N]>>
where
    [f32; N]: gltf::accessor::Item,
    [i8; N]: gltf::accessor::Item,
    [u8; N]: gltf::accessor::Item,
    [i16; N]: gltf::accessor::Item,
    [u16; N]: gltf::accessor::Item,
{
    use gltf::accessor::{DataType, Item, Iter};
    // `max`: the largest value of T, that a normalised component maps to 1; None for f32.
    fn convert<T: Item + Copy + Into<f32>, const N: usize>(
        accessor: gltf::Accessor<'_>,
        buffers: &[Vec<u8>],
        max: Option<f32>,
    ) -> Option<Vec<[f32; N]>>
    where
        [T; N]: Item,
    {
        let max = max.filter(|_| accessor.normalized());
        let values =
            Iter::<[T; N]>::new(accessor, |b| buffers.get(b.index()).map(|v| v.as_slice()))?;
        Some(
            values
                .map(|v| v.map(|c| max.map_or(c.into(), |max| (c.into() / max).max(-1.0))))
                .collect(),
        )
    }
    match accessor.data_type() {
        DataType::F32 => convert::<f32, N>(accessor, buffers, None),
        DataType::I8 => convert::<i8, N>(accessor, buffers, Some(f32::from(i8::MAX))),
        DataType::U8 => convert::<u8, N>(accessor, buffers, Some(f32::from(u8::MAX))),
        DataType::I16 => convert::<i16, N>(accessor, buffers, Some(f32::from(i16::MAX))),
        DataType::U16 => convert::<u16, N>(accessor, buffers, Some(f32::from(u16::MAX))),
        DataType::U32 => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_fans_unroll_with_their_winding() {
        let strip = triangle_list(Mode::TriangleStrip, vec![10, 11, 12, 13, 14]);
        assert_eq!(strip, [10, 11, 12, 11, 13, 12, 12, 13, 14]);
        let fan = triangle_list(Mode::TriangleFan, vec![10, 11, 12, 13]);
        assert_eq!(fan, [11, 12, 10, 12, 13, 10]);
        assert_eq!(triangle_list(Mode::Triangles, vec![1, 2, 3]), [1, 2, 3]);
        assert!(triangle_list(Mode::TriangleStrip, vec![1, 2]).is_empty());
        assert!(triangle_list(Mode::Lines, vec![1, 2, 3]).is_empty());
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b.png"), "a b.png");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("x%4"), "x%4");
    }

    #[test]
    fn data_uris() {
        let ok = decode_data_uri("data:application/octet-stream;base64,AAEC").unwrap();
        assert_eq!(ok.unwrap(), vec![0, 1, 2]);
        assert!(decode_data_uri("file.bin").is_none());
        let bad = decode_data_uri("data:application/octet-stream;base64,@@@").unwrap();
        assert!(bad.unwrap_err().contains("base64"));
    }

    #[test]
    fn every_texture_slot_is_read_and_the_first_transform_is_used() {
        use crate::builtin::gltf_builder::{GltfBuilder, MaterialDesc, NodeTransform, UvMode};
        let dir = crate::io::test_dir("gltf-slots");
        for image in ["a.png", "n.png", "mr.png", "ao.png"] {
            std::fs::write(dir.join(image), b"").expect("image file");
        }
        let mut b = GltfBuilder::new();
        let mut m = MaterialDesc::new("m");
        m.base_color_texture = Some("a.png".into());
        m.normal_texture = Some("n.png".into());
        m.metallic_roughness_texture = Some("mr.png".into());
        m.occlusion_texture = Some("ao.png".into());
        let mat = b.add_material(m);
        let mesh = b.add_mesh(
            "quad",
            crate::builtin::gltf_builder::plane(1.0, 1.0, UvMode::Unit),
            mat,
        );
        b.add_mesh_node("quad", mesh, NodeTransform::IDENTITY);
        let path = b.write(&dir, "slots").expect("write");
        let mut doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        // Base colour and metallic-roughness carry different transforms; emissive reuses
        // the base colour's image without one.
        let transform = |offset: f32| serde_json::json!({ "KHR_texture_transform": { "offset": [offset, 0.0], "scale": [2.0, 2.0] } });
        let pbr = &mut doc["materials"][0]["pbrMetallicRoughness"];
        pbr["baseColorTexture"]["extensions"] = transform(0.5);
        pbr["metallicRoughnessTexture"]["extensions"] = transform(0.25);
        let base_index = pbr["baseColorTexture"]["index"].clone();
        doc["materials"][0]["emissiveTexture"] = serde_json::json!({ "index": base_index });
        doc["extensionsUsed"] = serde_json::json!(["KHR_texture_transform"]);
        let bytes = serde_json::to_vec(&doc).expect("json");
        let scene = from_slice(&bytes, &path, &UriPolicy::default()).expect("import");

        let m = &scene.materials[0];
        let named = |slot: &Option<TextureRef>| match slot.as_ref().map(|t| &t.image) {
            Some(ImageSource::File(p)) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            _ => None,
        };
        let t = &m.textures;
        assert_eq!(named(&t.base_color).as_deref(), Some("a.png"));
        assert_eq!(named(&t.normal).as_deref(), Some("n.png"));
        assert_eq!(named(&t.metallic_roughness).as_deref(), Some("mr.png"));
        assert_eq!(named(&t.occlusion).as_deref(), Some("ao.png"));
        assert_eq!(named(&t.emissive).as_deref(), Some("a.png"));
        assert_eq!(
            m.uv_transform,
            TextureTransform {
                offset: [0.5, 0.0],
                rotation: 0.0,
                scale: [2.0, 2.0],
            }
        );
        // Metallic-roughness and emissive (no transform) each differ from the first.
        let differing = scene
            .warnings
            .iter()
            .filter(|w| w.contains("different KHR_texture_transform"))
            .count();
        assert_eq!(differing, 2, "{:?}", scene.warnings);
        assert!(
            !scene.warnings.iter().any(|w| w.contains("sampler")),
            "{:?}",
            scene.warnings
        );

        // The first texture's sampler becomes the material's sampling; a texture that
        // samples otherwise is named.
        doc["samplers"] = serde_json::json!([
            { "wrapS": 33071, "wrapT": 33648, "magFilter": 9728, "minFilter": 9986 },
            { "wrapS": 10497 }
        ]);
        let textures = doc["textures"].as_array_mut().expect("textures");
        for t in textures.iter_mut() {
            t["sampler"] = 0.into();
        }
        let import = |doc: &serde_json::Value| {
            let bytes = serde_json::to_vec(doc).expect("json");
            from_slice(&bytes, &path, &UriPolicy::default()).expect("import")
        };
        let first = Sampling {
            wrap: [WrapMode::ClampToEdge, WrapMode::MirroredRepeat],
            mag: Filter::Nearest,
            min: Filter::Nearest,
            mipmap: MipFilter::Linear,
        };
        let scene = import(&doc);
        assert_eq!(scene.materials[0].sampling, first);
        let named = |scene: &Scene| -> Vec<String> {
            let hits = scene.warnings.iter().filter(|w| w.contains("samples with"));
            hits.cloned().collect()
        };
        assert!(named(&scene).is_empty(), "{:?}", scene.warnings);
        doc["textures"][1]["sampler"] = 1.into();
        let scene = import(&doc);
        assert_eq!(scene.materials[0].sampling, first);
        let differing = named(&scene);
        assert_eq!(differing.len(), 1, "{:?}", scene.warnings);
        assert!(
            differing[0].contains("S REPEAT, T REPEAT, mag LINEAR, min LINEAR_MIPMAP_LINEAR")
                && differing[0].contains(
                    "S CLAMP_TO_EDGE, T MIRRORED_REPEAT, mag NEAREST, min NEAREST_MIPMAP_LINEAR"
                ),
            "{differing:?}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    fn file(p: &str) -> ImageSource {
        ImageSource::File(std::path::PathBuf::from(p))
    }

    #[test]
    fn arm_heuristic_on_real_names() {
        let lr = "../shared/assets/ntc_living_room/living_room/textures/";
        for (mr, packed) in [
            ("painted_wooden_cabinet_arm_1k.jpg", true),
            ("wooden_table_02_arm_1k.jpg", true),
            ("tea_set_01_ARM.png", true),
            ("sofa_03_rough_1k.jpg", false),
            ("wood_table_worn_rough_1k.png", false),
            ("armchair_rough_1k.jpg", false),
            ("charm_metal_rough.png", false),
            (
                "FlightHelmet_Materials_MetalPartsMat_OcclusionRoughMetal.png",
                true,
            ),
        ] {
            let src = file(&format!("{lr}{mr}"));
            assert_eq!(arm_packed(&src, None), packed, "{mr}");
        }
        let orm = file("fh/Helmet_OcclusionRoughMetal.png");
        assert!(arm_packed(&orm, Some(&orm)));
        let mr = file("a/metal_rough.png");
        assert!(!arm_packed(&mr, Some(&file("a/metal_ao.png"))));
        assert!(!arm_packed(
            &file("a/thing_arm_1k.jpg"),
            Some(&file("a/thing_ao_1k.jpg"))
        ));
        let emb = ImageSource::Embedded {
            name: "scene.glb#image3".into(),
            bytes: Arc::from(&[][..]),
        };
        assert!(!arm_packed(&emb, None));
    }
}
