//! Scenes: everything the renderer and the compressor need to know about a glTF scene.
//!
//! Owns the CPU-side scene description (meshes flattened into world-space instances,
//! PBR materials with their texture references, cameras), the glTF importer, tangent
//! generation, scene description files (`scenes/*.toml`) and opening any scene argument
//! ([`crate::open`], which generates a built-in scene from `crate::builtin` into a cache). It
//! does not decode images (that is `texture`), write scenes (the generators are
//! `crate::builtin`) or touch the GPU.

pub mod auto_camera;
pub mod camera_control;
pub mod description;
pub mod gltf_import;
pub mod gltf_validate;
pub mod lighting;
pub mod tangents;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use glam::{Mat4, Vec3};

pub use lighting::Lighting;

/// Largest image side in pixels: of any image a scene references (larger images are
/// refused before decoding) and of the built-in scenes' textures.
pub const MAX_IMAGE_SIDE: u32 = 16384;

/// Errors raised while loading a scene. Every variant names the file involved.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The glTF/GLB document is malformed.
    #[error("{path}: not a valid glTF 2.0 file: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The document requires an extension neurotex does not implement.
    #[error("{path}: requires the unsupported glTF extension `{extension}`")]
    UnsupportedExtension {
        /// The file.
        path: PathBuf,
        /// Extension name, e.g. `KHR_draco_mesh_compression`.
        extension: String,
    },
    /// A built-in scene could not be generated.
    #[error("cannot generate the built-in scene in {path}: {reason}")]
    Builtin {
        /// The output folder.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A scene description file (`.toml`) is invalid.
    #[error("{path}: invalid scene description: {reason}")]
    Description {
        /// The file.
        path: PathBuf,
        /// What is wrong (unknown key, wrong type, ...).
        reason: String,
    },
    /// The scene's description has no camera path of the name asked for.
    #[error("no camera path named `{name}` in the scene")]
    NoCameraPath {
        /// The name asked for.
        name: String,
    },
    /// `--camera` names neither a camera path of the description nor a camera of the
    /// glTF.
    #[error("{path}: no camera path or camera named `{name}` (available: {available})")]
    NoCamera {
        /// The scene's glTF.
        path: PathBuf,
        /// The name or index asked for.
        name: String,
        /// The camera paths and cameras there are, or `none`.
        available: String,
    },
}

/// Result alias for scene loading.
pub type Result<T, E = SceneError> = std::result::Result<T, E>;

/// One vertex as uploaded to the GPU (`shaders/gbuffer.wgsl`, `VertexInput`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[derive(bytemuck::Pod, bytemuck::Zeroable)]
pub struct Vertex {
    /// Object-space position (metres).
    pub position: [f32; 3],
    /// Object-space unit normal.
    pub normal: [f32; 3],
    /// Object-space unit tangent; `w` is the bitangent sign (±1), glTF convention.
    pub tangent: [f32; 4],
    /// Texture coordinates of the set the material's textures sample
    /// ([`MaterialTextures::uv_set`]; glTF: origin top-left, v down).
    pub uv: [f32; 2],
}

/// A triangle list with one material.
#[derive(Clone, Debug)]
pub struct Primitive {
    /// Vertices.
    pub vertices: Vec<Vertex>,
    /// Triangle list indices into `vertices` (widened to `u32` whatever the source width).
    pub indices: Vec<u32>,
    /// Index into [`Scene::materials`].
    pub material: usize,
}

/// A named mesh: one or more primitives.
#[derive(Clone, Debug)]
pub struct Mesh {
    /// Name from the file, or `mesh<N>`.
    pub name: String,
    /// The primitives.
    pub primitives: Vec<Primitive>,
}

/// A mesh placed in the world by the node hierarchy.
#[derive(Clone, Copy, Debug)]
pub struct Instance {
    /// Index into [`Scene::meshes`].
    pub mesh: usize,
    /// Object → world transform (product of the node chain).
    pub world_from_local: Mat4,
}

/// How a material's alpha is interpreted (glTF `alphaMode`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum AlphaMode {
    /// Alpha is ignored.
    Opaque,
    /// Fragments with alpha below the cutoff are discarded.
    Mask {
        /// The cutoff (glTF default 0.5).
        cutoff: f32,
    },
    /// Alpha-blended in glTF. The deferred renderer draws it with stochastic
    /// (screen-door) transparency, which temporal accumulation resolves.
    Blend,
}

/// Where an image's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ImageSource {
    /// An external file (already resolved against the glTF's folder).
    File(PathBuf),
    /// Bytes embedded in a GLB buffer view or a data URI.
    Embedded {
        /// A stable name for messages and caches: `<file>#image<N>`.
        name: String,
        /// The encoded bytes (any format [`crate::texture::image_io::decode`] reads).
        bytes: Arc<[u8]>,
    },
}

impl ImageSource {
    /// A human-readable name for messages.
    pub fn display_name(&self) -> String {
        match self {
            ImageSource::File(p) => p.display().to_string(),
            ImageSource::Embedded { name, .. } => name.clone(),
        }
    }

    /// The file name's stem (or the embedded name), used for heuristics such as ARM packing.
    pub fn stem(&self) -> String {
        match self {
            ImageSource::File(p) => p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ImageSource::Embedded { name, .. } => name.clone(),
        }
    }
}

/// `KHR_texture_transform`: uv' = offset + rotate(rotation) · (scale ⊙ uv).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextureTransform {
    /// Translation in UV units.
    pub offset: [f32; 2],
    /// Counter-clockwise rotation in radians.
    pub rotation: f32,
    /// Scale.
    pub scale: [f32; 2],
}

impl Default for TextureTransform {
    fn default() -> Self {
        Self {
            offset: [0.0, 0.0],
            rotation: 0.0,
            scale: [1.0, 1.0],
        }
    }
}

impl TextureTransform {
    /// The transform as the 2×3 matrix columns the shaders use: `[c0, c1, c2]` with
    /// `uv' = c0 * u + c1 * v + c2`.
    pub fn matrix(&self) -> [[f32; 2]; 3] {
        let (s, c) = self.rotation.sin_cos();
        // glTF: T * R * S, with R = [[c, s], [-s, c]] (column-major as in the spec).
        [
            [c * self.scale[0], -s * self.scale[0]],
            [s * self.scale[1], c * self.scale[1]],
            self.offset,
        ]
    }
}

/// One texture slot of a material.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureRef {
    /// The image.
    pub image: ImageSource,
    /// `texCoord` index: the UV set the slot samples. Every slot of a material samples
    /// the same set ([`MaterialTextures::uv_set`]); the glTF importer leaves out slots on
    /// another one.
    pub tex_coord: u32,
}

/// The texture slots of a glTF metallic-roughness material.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MaterialTextures {
    /// Base colour (sRGB RGB + linear alpha).
    pub base_color: Option<TextureRef>,
    /// Tangent-space normal map (OpenGL convention, +Y up).
    pub normal: Option<TextureRef>,
    /// Metallic (B) and roughness (G); R holds occlusion when ARM-packed.
    pub metallic_roughness: Option<TextureRef>,
    /// Occlusion (R).
    pub occlusion: Option<TextureRef>,
    /// Emissive (sRGB RGB).
    pub emissive: Option<TextureRef>,
}

impl MaterialTextures {
    /// The slots that hold a texture, in slot order.
    pub fn present(&self) -> impl Iterator<Item = &TextureRef> {
        [
            &self.base_color,
            &self.normal,
            &self.metallic_roughness,
            &self.occlusion,
            &self.emissive,
        ]
        .into_iter()
        .flatten()
    }

    /// The UV set (`TEXCOORD_n`) the material's textures sample: that of its first
    /// texture, 0 without any.
    pub fn uv_set(&self) -> u32 {
        self.present().next().map_or(0, |t| t.tex_coord)
    }

    /// The image files of the slots (embedded images left out), in slot order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.present().filter_map(|r| match &r.image {
            ImageSource::File(p) => Some(p.as_path()),
            ImageSource::Embedded { .. } => None,
        })
    }
}

/// A PBR metallic-roughness material with its constants and texture references.
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    /// Name from the file, or `material<N>`.
    pub name: String,
    /// Linear RGBA multiplier of the base colour texture.
    pub base_color_factor: [f32; 4],
    /// Metallic multiplier.
    pub metallic_factor: f32,
    /// Roughness multiplier.
    pub roughness_factor: f32,
    /// Linear RGB emissive multiplier (already multiplied by `KHR_materials_emissive_strength`).
    pub emissive_factor: [f32; 3],
    /// Normal map scale.
    pub normal_scale: f32,
    /// Occlusion strength.
    pub occlusion_strength: f32,
    /// Alpha interpretation.
    pub alpha_mode: AlphaMode,
    /// Render both faces.
    pub double_sided: bool,
    /// UV transform shared by all slots (`KHR_texture_transform` of the base colour slot).
    pub uv_transform: TextureTransform,
    /// Texture references.
    pub textures: MaterialTextures,
    /// True when occlusion is read from the R channel of `metallic_roughness` (ARM packing).
    pub occlusion_from_arm: bool,
    /// How all its textures are addressed and filtered (the first texture's sampler's).
    pub sampling: Sampling,
}

/// How a material's textures are addressed and filtered (a glTF sampler); the default
/// repeats and filters trilinearly (glTF leaves an absent filter to the renderer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sampling {
    /// Wrapping along U (glTF's `wrapS`) and V (`wrapT`).
    pub wrap: [WrapMode; 2],
    /// Filter where a texel covers more than a pixel (`magFilter`).
    pub mag: Filter,
    /// Filter within a mip where a pixel covers more than a texel (`minFilter`).
    pub min: Filter,
    /// Filter between mips (`minFilter`'s `MIPMAP_*` part).
    pub mipmap: MipFilter,
}

/// How a texture's mips are filtered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MipFilter {
    /// Between the two nearest mips.
    #[default]
    Linear,
    /// The nearest mip.
    Nearest,
    /// No mipmapping: mip 0 only.
    Off,
}

/// A texture filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Filter {
    /// The nearest texel (or mip).
    Nearest,
    /// Interpolated between texels (or mips).
    #[default]
    Linear,
}

/// How texture coordinates outside [0, 1] read a texture (glTF sampler `wrapS`/`wrapT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WrapMode {
    /// Tile (`REPEAT`, glTF's default).
    #[default]
    Repeat,
    /// Hold the edge texel (`CLAMP_TO_EDGE`).
    ClampToEdge,
    /// Tile with every other copy mirrored (`MIRRORED_REPEAT`).
    MirroredRepeat,
}

impl WrapMode {
    /// Texel `c` (any integer) of an axis of `n` texels, addressed with this mode.
    pub fn texel(self, c: i64, n: u32) -> u32 {
        let n = i64::from(n.max(1));
        let t = match self {
            WrapMode::Repeat => c.rem_euclid(n),
            WrapMode::ClampToEdge => c.clamp(0, n - 1),
            WrapMode::MirroredRepeat => {
                let m = c.rem_euclid(2 * n);
                if m < n { m } else { 2 * n - 1 - m }
            }
        };
        t as u32
    }
}

impl Default for Material {
    fn default() -> Self {
        Self {
            name: String::new(),
            base_color_factor: [1.0; 4],
            metallic_factor: 1.0,
            roughness_factor: 1.0,
            emissive_factor: [0.0; 3],
            normal_scale: 1.0,
            occlusion_strength: 1.0,
            alpha_mode: AlphaMode::Opaque,
            double_sided: false,
            uv_transform: TextureTransform::default(),
            textures: MaterialTextures::default(),
            occlusion_from_arm: false,
            sampling: Sampling::default(),
        }
    }
}

/// A camera from the file or made up to frame the scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
    /// Name.
    pub name: String,
    /// Eye position (world).
    pub position: Vec3,
    /// Unit forward direction (world).
    pub forward: Vec3,
    /// Vertical field of view in radians.
    pub yfov: f32,
    /// Near plane distance (metres). The projection is reversed-Z with an infinite far plane.
    pub znear: f32,
}

impl Camera {
    /// A camera looking at the whole of `bounds` from the front-left-above.
    pub fn framing(bounds: &Aabb) -> Self {
        let center = bounds.center();
        let radius = bounds.radius().max(1e-3);
        let yfov = 50f32.to_radians();
        let dir = Vec3::new(-0.55, -0.45, -0.70).normalize();
        let dist = radius / (yfov * 0.5).sin();
        Self {
            name: "auto".into(),
            position: center - dir * dist * 0.9,
            forward: dir,
            yfov,
            znear: (radius * 0.002).max(0.01),
        }
    }

    /// World → view matrix (right-handed, looking down −Z).
    pub fn view_from_world(&self) -> Mat4 {
        let up = if self.forward.y.abs() > 0.999 {
            Vec3::Z
        } else {
            Vec3::Y
        };
        glam::camera::rh::view::look_to_mat4(self.position, self.forward, up)
    }

    /// View → clip matrix: reversed-Z, infinite far plane, wgpu depth range [0, 1].
    pub fn clip_from_view(&self, aspect: f32) -> Mat4 {
        glam::camera::rh::proj::directx::perspective_infinite_reverse(self.yfov, aspect, self.znear)
    }
}

/// Axis-aligned bounding box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Minimum corner.
    pub min: Vec3,
    /// Maximum corner.
    pub max: Vec3,
}

impl Aabb {
    /// The empty box (min = +inf, max = −inf).
    pub const EMPTY: Aabb = Aabb {
        min: Vec3::splat(f32::INFINITY),
        max: Vec3::splat(f32::NEG_INFINITY),
    };

    /// Grow to contain `p`.
    pub fn extend(&mut self, p: Vec3) {
        self.min = self.min.min(p);
        self.max = self.max.max(p);
    }

    /// Centre.
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// Half the diagonal.
    pub fn radius(&self) -> f32 {
        (self.max - self.min).length() * 0.5
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x
    }
}

/// A loaded scene.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The file it came from.
    pub source: PathBuf,
    /// Meshes.
    pub meshes: Vec<Mesh>,
    /// Mesh placements.
    pub instances: Vec<Instance>,
    /// Materials, indexed by [`Primitive::material`]. The last one may be the default
    /// material that glTF primitives without a material use.
    pub materials: Vec<Material>,
    /// Cameras found in the node hierarchy.
    pub cameras: Vec<Camera>,
    /// World-space bounds of all instances.
    pub bounds: Aabb,
    /// Non-fatal observations made while importing (e.g. a second UV set ignored).
    pub warnings: Vec<String>,
    /// The external buffer files its geometry was read from.
    pub buffers: Vec<PathBuf>,
}

impl Scene {
    /// Every file the scene was read from: the glTF, its buffers and every image file
    /// its materials name, each once, in that order.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.source.clone()];
        let images = self.materials.iter().flat_map(|m| m.textures.files());
        for f in self.buffers.iter().map(PathBuf::as_path).chain(images) {
            if !files.iter().any(|g| g == f) {
                files.push(f.to_path_buf());
            }
        }
        files
    }

    /// Load a `.gltf` or `.glb` file.
    pub fn load(path: &Path) -> Result<Scene> {
        gltf_import::load(path)
    }

    /// Total triangle count over all instances.
    pub fn triangle_count(&self) -> usize {
        self.instances
            .iter()
            .map(|i| {
                self.meshes[i.mesh]
                    .primitives
                    .iter()
                    .map(|p| p.indices.len() / 3)
                    .sum::<usize>()
            })
            .sum()
    }
}
