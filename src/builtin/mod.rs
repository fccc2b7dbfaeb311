//! Built-in procedural scenes: generators that write a glTF scene (and its textures or
//! description) into a folder, so that every feature can be shown and tested without
//! downloads.
//!
//! - [`toyshop`]: the toy shop (≥ 24 procedural PBR materials; the default scene).
//! - [`street`]: a Bistro-style street dressed with every set of a texture-set manifest.
//! - [`panel`]: one set of a manifest on two triangles filling a 16:9 view (the full-screen,
//!   one-material frame of the decode benchmarks).
//! - [`manifest_scene`]: what the two manifest-dressed generators share (materials from
//!   manifest rows, image URIs, asset folders, errors).
//! - [`kit`]: the construction kit both build with (parts, shape helpers, an assembly).
//! - [`gltf_builder`]: a small glTF 2.0 writer and the mesh shapes (box, sphere, …).
//! - [`procedural`]: hashes, noise, patterns and the platform-independent sine.
//!
//! Output is a pure function of the options: the same options give the same bytes on
//! every platform. Generators read scene types (`scene`) and manifests (`texture`), and
//! must not load scenes, decode images or touch the GPU; opening a scene argument, which
//! generates the built-in scene into a cache, is `open`.

pub mod gltf_builder;
pub mod kit;
pub mod manifest_scene;
pub mod panel;
pub mod procedural;
pub mod street;
pub mod toyshop;
