//! Validation of a glTF document before any of the `gltf` crate's readers touch it.
//!
//! The `gltf` crate trusts its input: an accessor index that does not exist, an
//! `indices` accessor of floats, a `TEXCOORD_0` of unsigned ints, a `byteStride` shorter
//! than the element or an image with neither `uri` nor `bufferView` make it panic, and an
//! accessor that runs past its buffer view is silently cut short. [`validate`] checks the
//! parsed JSON for all of that first and names the JSON path of the first problem:
//!
//! - every primitive attribute index (the crate's own validation indexes with it), then
//!   the crate's validation (every other index, enum values, required fields);
//! - per semantic, the accessor type and component type the glTF 2.0 specification
//!   allows (`POSITION` VEC3 float, `indices` SCALAR unsigned, ..., and the integer
//!   attributes of `KHR_mesh_quantization` where the file uses it), attributes of one
//!   primitive with equal counts, triangle lists whose index count is a multiple of 3;
//! - every accessor: count ≥ 1, a buffer view (or a sparse part), a stride of at least
//!   the element size, and its last element inside its view; every view inside its
//!   buffer; sparse indices and values inside their views;
//! - every image: exactly one of `uri` and `bufferView`, and a `mimeType` with a view;
//! - every texture: a `source`, or a `KHR_texture_basisu` / `MSFT_texture_dds` `source`,
//!   naming an image that exists;
//! - every number the importer uses is finite: material factors, alpha cutoff, texture
//!   transforms, node transforms, camera parameters; material factors within glTF's
//!   ranges (colour factors, metallic, roughness and occlusion strength in 0..=1, an
//!   emissive strength up to [`MAX_EMISSIVE_STRENGTH`]), node matrices affine;
//! - `asset.version` (and `minVersion`) of glTF 2.
//!
//! Vertex values themselves (NaN positions, …) are checked by the importer after reading.

use gltf::json;
use gltf::json::validation::{Checked, Validate};

/// Texture extensions whose `source` names a KTX2, DDS or WebP image. A texture reads its
/// core `source` (a PNG or JPEG, the lossless or higher-quality fallback) when it has one,
/// else the first of these it carries.
pub const IMAGE_SOURCE_EXTENSIONS: [&str; 3] =
    ["KHR_texture_basisu", "MSFT_texture_dds", "EXT_texture_webp"];

/// Where and what: `meshes[0].primitives[1].indices: ...`.
pub type Problem = String;

/// Check the 12-byte header of a GLB file (`bytes` starting with `glTF`) before the
/// `gltf` crate reads it: version 2, and a total length that covers the header and a
/// chunk header without exceeding the bytes there are (the crate subtracts the header
/// size from the declared length unchecked). Other content passes unchanged.
pub fn check_glb_header(bytes: &[u8]) -> Result<(), Problem> {
    let Some(rest) = bytes.strip_prefix(b"glTF") else {
        return Ok(());
    };
    let word = |at: usize| {
        rest.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(version), Some(length)) = (word(0), word(4)) else {
        return Err(format!(
            "GLB header: {} bytes, the header alone takes 12",
            bytes.len()
        ));
    };
    if version != 2 {
        return Err(format!("GLB header: version {version}, expected 2"));
    }
    let length = length as usize;
    if length < 20 {
        return Err(format!(
            "GLB header: total length {length} is shorter than the header and a chunk header (20 bytes)"
        ));
    }
    if length > bytes.len() {
        return Err(format!(
            "GLB header: total length {length}, but the file holds {} bytes (truncated?)",
            bytes.len()
        ));
    }
    Ok(())
}

/// Check `root` (parsed without validation). `Err` holds one line: the JSON path and the
/// problem.
pub fn validate(root: &json::Root) -> Result<(), Problem> {
    check_asset(&root.asset)?;
    check_attribute_indices(root)?;
    let mut errors: Vec<(json::Path, json::validation::Error)> = Vec::new();
    root.validate(root, json::Path::new, &mut |path, error| {
        let path = path();
        // The crate does not list KHR_mesh_quantization (the importer reads it itself).
        let ours = matches!(error, json::validation::Error::Unsupported)
            && path.as_str().starts_with("extensionsRequired")
            && path.as_str().contains(MESH_QUANTIZATION);
        if !ours {
            errors.push((path, error));
        }
    });
    if let Some((path, error)) = errors.first() {
        let more = match errors.len() {
            1 => String::new(),
            n => format!(" (and {} more problems)", n - 1),
        };
        return Err(format!("{path}: {}{more}", describe(*error)));
    }
    for (i, view) in root.buffer_views.iter().enumerate() {
        check_view(root, i, view)?;
    }
    // Primitives first: a wrong type per semantic says more than the extent it implies.
    let quantized = uses_quantization(root);
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (p, prim) in mesh.primitives.iter().enumerate() {
            let at = format!("meshes[{m}].primitives[{p}]");
            check_primitive(root, &at, prim, quantized)?;
        }
    }
    for (i, accessor) in root.accessors.iter().enumerate() {
        check_accessor(root, i, accessor)?;
    }
    for (i, image) in root.images.iter().enumerate() {
        check_image(i, image)?;
    }
    for (i, texture) in root.textures.iter().enumerate() {
        check_texture_sources(i, texture, root.images.len())?;
    }
    for (i, material) in root.materials.iter().enumerate() {
        check_material(&format!("materials[{i}]"), material)?;
    }
    for (i, node) in root.nodes.iter().enumerate() {
        check_node(&format!("nodes[{i}]"), node)?;
    }
    for (i, camera) in root.cameras.iter().enumerate() {
        check_camera(&format!("cameras[{i}]"), camera)?;
    }
    Ok(())
}

/// The crate's validation error in words.
fn describe(error: json::validation::Error) -> &'static str {
    use json::validation::Error as E;
    match error {
        E::IndexOutOfBounds => "index out of bounds",
        E::Invalid => "invalid value",
        E::Missing => "required value missing",
        E::Oversize => "size exceeds the system's limits",
        E::Unsupported => "unsupported required extension",
    }
}

/// The primitive attribute indices (the crate's validation hook reads the POSITION
/// accessor with an unchecked index).
fn check_attribute_indices(root: &json::Root) -> Result<(), Problem> {
    let n = root.accessors.len();
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (p, prim) in mesh.primitives.iter().enumerate() {
            for (semantic, index) in &prim.attributes {
                if index.value() >= n {
                    return Err(format!(
                        "meshes[{m}].primitives[{p}].attributes.{}: accessor {} does not exist ({n} accessors)",
                        semantic_name(semantic),
                        index.value()
                    ));
                }
            }
        }
    }
    Ok(())
}

fn semantic_name(s: &Checked<json::mesh::Semantic>) -> String {
    match s {
        Checked::Valid(s) => s.to_string(),
        Checked::Invalid => "<invalid>".into(),
    }
}

/// A buffer view inside its buffer, with a sane stride.
fn check_view(root: &json::Root, i: usize, view: &json::buffer::View) -> Result<(), Problem> {
    let at = format!("bufferViews[{i}]");
    let buffer = &root.buffers[view.buffer.value()];
    let offset = view.byte_offset.map_or(0, |o| o.0);
    let end = offset.checked_add(view.byte_length.0);
    match end {
        Some(end) if end <= buffer.byte_length.0 => {}
        _ => {
            return Err(format!(
                "{at}: bytes {offset}..{offset}+{} lie outside buffer {} of {} bytes",
                view.byte_length.0,
                view.buffer.value(),
                buffer.byte_length.0
            ));
        }
    }
    if view.byte_length.0 == 0 {
        return Err(format!("{at}.byteLength: must be at least 1"));
    }
    Ok(())
}

/// Bytes of one component.
fn component_size(t: json::accessor::ComponentType) -> u64 {
    use json::accessor::ComponentType as C;
    match t {
        C::I8 | C::U8 => 1,
        C::I16 | C::U16 => 2,
        C::U32 | C::F32 => 4,
    }
}

/// Components of an element.
fn multiplicity(t: json::accessor::Type) -> u64 {
    use json::accessor::Type as T;
    match t {
        T::Scalar => 1,
        T::Vec2 => 2,
        T::Vec3 => 3,
        T::Vec4 | T::Mat2 => 4,
        T::Mat3 => 9,
        T::Mat4 => 16,
    }
}

/// `count` elements of `elem` bytes every `stride` bytes from `offset` lie inside a view
/// of `view_len` bytes.
fn check_extent(
    at: &str,
    what: &str,
    offset: u64,
    count: u64,
    elem: u64,
    stride: u64,
    view_len: u64,
) -> Result<(), Problem> {
    let end = count
        .checked_sub(1)
        .and_then(|n| n.checked_mul(stride))
        .and_then(|n| n.checked_add(elem))
        .and_then(|n| n.checked_add(offset));
    match end {
        Some(end) if end <= view_len => Ok(()),
        _ => Err(format!(
            "{at}: {count} {what} of {elem} bytes every {stride} bytes from byte {offset} run past the end of its buffer view ({view_len} bytes)"
        )),
    }
}

/// The stride of `view` for elements of `elem` bytes.
fn stride_of(root: &json::Root, view: usize, elem: u64, at: &str) -> Result<u64, Problem> {
    match root.buffer_views[view].byte_stride {
        None => Ok(elem),
        Some(s) => {
            let s = s.0 as u64;
            if s < elem {
                Err(format!(
                    "{at}: bufferViews[{view}].byteStride {s} is shorter than the {elem}-byte element"
                ))
            } else {
                Ok(s)
            }
        }
    }
}

fn check_accessor(root: &json::Root, i: usize, accessor: &json::Accessor) -> Result<(), Problem> {
    let at = format!("accessors[{i}]");
    // The crate's validation has checked both enums.
    let (Checked::Valid(ct), Checked::Valid(ty)) = (&accessor.component_type, &accessor.type_)
    else {
        return Err(format!("{at}: invalid componentType or type"));
    };
    let elem = component_size(ct.0) * multiplicity(*ty);
    let count = accessor.count.0;
    if count == 0 {
        return Err(format!("{at}.count: must be at least 1"));
    }
    let offset = accessor.byte_offset.map_or(0, |o| o.0);
    match accessor.buffer_view {
        Some(view) => {
            let stride = stride_of(root, view.value(), elem, &at)?;
            let view_len = root.buffer_views[view.value()].byte_length.0;
            check_extent(&at, "elements", offset, count, elem, stride, view_len)?;
        }
        None if accessor.sparse.is_none() => {
            return Err(format!(
                "{at}: has neither a bufferView nor sparse values (all-zero accessors are not supported)"
            ));
        }
        None => {}
    }
    if let Some(sparse) = &accessor.sparse {
        let at = format!("{at}.sparse");
        let n = sparse.count.0;
        if n == 0 || n > count {
            return Err(format!(
                "{at}.count: {n} is outside 1..={count} (the accessor's count)"
            ));
        }
        let Checked::Valid(ict) = &sparse.indices.component_type else {
            return Err(format!("{at}.indices.componentType: invalid value"));
        };
        use json::accessor::ComponentType as C;
        if !matches!(ict.0, C::U8 | C::U16 | C::U32) {
            return Err(format!(
                "{at}.indices.componentType: {:?} (sparse indices are unsigned integers)",
                ict.0
            ));
        }
        let parts = [
            (
                "indices",
                &sparse.indices.buffer_view,
                sparse.indices.byte_offset.0,
                component_size(ict.0),
            ),
            (
                "values",
                &sparse.values.buffer_view,
                sparse.values.byte_offset.0,
                elem,
            ),
        ];
        for (what, view, offset, size) in parts {
            let at = format!("{at}.{what}");
            let view = view.value();
            let stride = stride_of(root, view, size, &at)?;
            let view_len = root.buffer_views[view].byte_length.0;
            check_extent(&at, what, offset, n, size, stride, view_len)?;
        }
    }
    Ok(())
}

/// The glTF extension that lets vertex attributes be stored as 8- and 16-bit integers.
pub const MESH_QUANTIZATION: &str = "KHR_mesh_quantization";

/// The types a semantic's accessor may have: (allowed element types, allowed component
/// types, whether integer components must be normalised). `quantized`: the file uses
/// [`MESH_QUANTIZATION`], which adds 8- and 16-bit integer positions and texture
/// coordinates (normalised or not) and normalised 8- and 16-bit normals and tangents.
fn allowed(
    semantic: &json::mesh::Semantic,
    quantized: bool,
) -> Option<(
    &'static [json::accessor::Type],
    &'static [json::accessor::ComponentType],
    bool,
)> {
    use json::accessor::ComponentType as C;
    use json::accessor::Type as T;
    use json::mesh::Semantic as S;
    const INTEGERS: &[C] = &[C::F32, C::I8, C::U8, C::I16, C::U16];
    const SIGNED_NORMALIZED: &[C] = &[C::F32, C::I8, C::I16];
    Some(match (semantic, quantized) {
        (S::Positions | S::Normals, false) => (&[T::Vec3], &[C::F32], false),
        (S::Positions, true) => (&[T::Vec3], INTEGERS, false),
        (S::Normals, true) => (&[T::Vec3], SIGNED_NORMALIZED, true),
        (S::Tangents, false) => (&[T::Vec4], &[C::F32], false),
        (S::Tangents, true) => (&[T::Vec4], SIGNED_NORMALIZED, true),
        (S::TexCoords(_), false) => (&[T::Vec2], &[C::F32, C::U8, C::U16], true),
        (S::TexCoords(_), true) => (&[T::Vec2], INTEGERS, false),
        (S::Colors(_), _) => (&[T::Vec3, T::Vec4], &[C::F32, C::U8, C::U16], true),
        (S::Joints(_), _) => (&[T::Vec4], &[C::U8, C::U16], false),
        (S::Weights(_), _) => (&[T::Vec4], &[C::F32, C::U8, C::U16], true),
        // Application-specific semantics (`_NAME`, gltf's "extras" feature).
        (S::Extras(_), _) => return None,
    })
}

/// Whether the document uses [`MESH_QUANTIZATION`].
fn uses_quantization(root: &json::Root) -> bool {
    root.extensions_used
        .iter()
        .chain(&root.extensions_required)
        .any(|e| e == MESH_QUANTIZATION)
}

fn check_primitive(
    root: &json::Root,
    at: &str,
    prim: &json::mesh::Primitive,
    quantized: bool,
) -> Result<(), Problem> {
    // The first attribute's name, element count and accessor.
    let mut vertex_count: Option<(String, u64, usize)> = None;
    for (semantic, index) in &prim.attributes {
        let Checked::Valid(semantic) = semantic else {
            continue;
        };
        let a = &root.accessors[index.value()];
        let name = semantic.to_string();
        let path = format!("{at}.attributes.{name}");
        if let Some((types, components, normalized)) = allowed(semantic, quantized) {
            let (Checked::Valid(ct), Checked::Valid(ty)) = (&a.component_type, &a.type_) else {
                continue;
            };
            if !types.contains(ty) || !components.contains(&ct.0) {
                let hint = match allowed(semantic, true) {
                    Some((_, with, _)) if !quantized && with.contains(&ct.0) => {
                        format!(" (without {MESH_QUANTIZATION} in extensionsRequired)")
                    }
                    _ => String::new(),
                };
                return Err(format!(
                    "{path}: accessor {} is {:?} of {:?}; {name} must be {} of {}{hint}",
                    index.value(),
                    ty,
                    ct.0,
                    list(types),
                    list(components)
                ));
            }
            if normalized && ct.0 != json::accessor::ComponentType::F32 && !a.normalized {
                return Err(format!(
                    "{path}: accessor {} holds {:?} integers that are not normalized",
                    index.value(),
                    ct.0
                ));
            }
        }
        match &vertex_count {
            None => vertex_count = Some((name, a.count.0, index.value())),
            Some((first, n, first_index)) if *n != a.count.0 => {
                // A count that runs past its data is the problem to name, not the
                // mismatch it makes.
                check_accessor(root, *first_index, &root.accessors[*first_index])?;
                check_accessor(root, index.value(), a)?;
                return Err(format!(
                    "{path}: accessor {} has {} elements but {first} has {n}",
                    index.value(),
                    a.count.0
                ));
            }
            Some(_) => {}
        }
    }
    let triangles = matches!(prim.mode, Checked::Valid(json::mesh::Mode::Triangles));
    if let Some(index) = prim.indices {
        let a = &root.accessors[index.value()];
        use json::accessor::ComponentType as C;
        let ok = matches!(a.type_, Checked::Valid(json::accessor::Type::Scalar))
            && matches!(&a.component_type, Checked::Valid(ct) if matches!(ct.0, C::U8 | C::U16 | C::U32));
        if !ok {
            return Err(format!(
                "{at}.indices: accessor {} must be SCALAR of UNSIGNED_BYTE, UNSIGNED_SHORT or UNSIGNED_INT",
                index.value()
            ));
        }
        if triangles && !a.count.0.is_multiple_of(3) {
            return Err(format!(
                "{at}.indices: {} indices do not make whole triangles (a multiple of 3)",
                a.count.0
            ));
        }
    } else if triangles
        && let Some((name, n, _)) = &vertex_count
        && !n.is_multiple_of(3)
    {
        return Err(format!(
            "{at}: {n} {name} elements without indices do not make whole triangles (a multiple of 3)"
        ));
    }
    Ok(())
}

fn list<T: std::fmt::Debug>(items: &[T]) -> String {
    items
        .iter()
        .map(|t| format!("{t:?}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

fn check_image(i: usize, image: &json::Image) -> Result<(), Problem> {
    let at = format!("images[{i}]");
    match (&image.uri, &image.buffer_view) {
        (Some(_), Some(_)) => Err(format!("{at}: has both uri and bufferView")),
        (None, None) => Err(format!("{at}: has neither uri nor bufferView")),
        (None, Some(_)) => match image.mime_type.as_ref().map(|m| m.0.as_str()) {
            Some("image/png" | "image/jpeg" | "image/ktx2" | "image/vnd-ms.dds" | "image/webp") => {
                Ok(())
            }
            Some(other) => Err(format!(
                "{at}.mimeType: `{other}` (expected image/png, image/jpeg, image/ktx2, image/vnd-ms.dds or image/webp)"
            )),
            None => Err(format!("{at}: a bufferView image needs a mimeType")),
        },
        (Some(_), None) => Ok(()),
    }
}

/// `asset.version` (and `minVersion`) of glTF 2: `2.<minor>`; a glTF 1.0 file has
/// another layout, and a later major version may too. A `minVersion` above 2.0 says the
/// file needs what a later glTF 2 adds, which this 2.0 reader cannot promise to read.
fn check_asset(asset: &json::Asset) -> Result<(), Problem> {
    // (major, minor) of `major.minor`, both decimal digits.
    let parse = |v: &str| {
        let (major, minor) = v.split_once('.')?;
        let number = |s: &str| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u64>().ok())?
        };
        Some((number(major)?, number(minor)?))
    };
    if !matches!(parse(&asset.version), Some((2, _))) {
        return Err(format!(
            "asset.version: `{}` is not a glTF 2 version (2.0 expected)",
            asset.version
        ));
    }
    match asset.min_version.as_deref().map(|min| (min, parse(min))) {
        None | Some((_, Some((2, 0)))) => Ok(()),
        Some((min, Some((2, _)))) => Err(format!(
            "asset.minVersion: `{min}` needs a later glTF 2 than this reader's 2.0"
        )),
        Some((min, _)) => Err(format!("asset.minVersion: `{min}` is not a glTF 2 version")),
    }
}

/// `values` are all finite and within `lo..=hi` (glTF's range for them), else the
/// problem at `at`.
fn within(at: &str, values: &[f32], lo: f32, hi: f32) -> Result<(), Problem> {
    finite(at, values)?;
    let at_k = |k: usize| {
        if values.len() == 1 {
            at.to_string()
        } else {
            format!("{at}[{k}]")
        }
    };
    match values.iter().position(|v| !(lo..=hi).contains(v)) {
        None => Ok(()),
        Some(k) => Err(format!("{}: {} is outside {lo}..={hi}", at_k(k), values[k])),
    }
}

/// Largest `KHR_materials_emissive_strength` accepted: far above any physical light in
/// a scene's units, far below what overflows the renderer's f16 and f32 targets.
pub const MAX_EMISSIVE_STRENGTH: f32 = 1.0e4;

/// A texture's image: its core `source` (the crate checks its range) or an image-source
/// extension's `source`, an index of one of the `images` images.
fn check_texture_sources(i: usize, texture: &json::Texture, images: usize) -> Result<(), Problem> {
    let at = format!("textures[{i}]");
    let mut has_source = texture.source.value() != u32::MAX as usize;
    let others = texture.extensions.as_ref().map(|e| &e.others);
    for ext in IMAGE_SOURCE_EXTENSIONS {
        let Some(value) = others.and_then(|o| o.get(ext)) else {
            continue;
        };
        let index = value.get("source").and_then(|v| v.as_u64());
        match index {
            Some(index) if index < images as u64 => has_source = true,
            Some(index) => {
                return Err(format!(
                    "{at}.extensions.{ext}.source: image {index} does not exist ({images} images)"
                ));
            }
            None => {
                return Err(format!(
                    "{at}.extensions.{ext}.source: missing or not an image index"
                ));
            }
        }
    }
    if has_source {
        Ok(())
    } else {
        Err(format!(
            "{at}: no image (neither `source` nor a {} source)",
            IMAGE_SOURCE_EXTENSIONS.join(" or ")
        ))
    }
}

/// `values` are all finite, else the problem at `at`.
fn finite(at: &str, values: &[f32]) -> Result<(), Problem> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(k) if values.len() == 1 => Err(format!("{at}: {} is not a finite number", values[k])),
        Some(k) => Err(format!("{at}[{k}]: {} is not a finite number", values[k])),
    }
}

fn check_transform(
    at: &str,
    t: &Option<json::extensions::texture::TextureTransform>,
) -> Result<(), Problem> {
    let Some(t) = t else { return Ok(()) };
    finite(&format!("{at}.offset"), &t.offset.0)?;
    finite(&format!("{at}.rotation"), &[t.rotation.0])?;
    finite(&format!("{at}.scale"), &t.scale.0)
}

fn info_transform(
    info: &json::texture::Info,
) -> &Option<json::extensions::texture::TextureTransform> {
    static NONE: Option<json::extensions::texture::TextureTransform> = None;
    info.extensions
        .as_ref()
        .map_or(&NONE, |e| &e.texture_transform)
}

fn check_material(at: &str, m: &json::Material) -> Result<(), Problem> {
    let pbr = &m.pbr_metallic_roughness;
    within(
        &format!("{at}.pbrMetallicRoughness.baseColorFactor"),
        &pbr.base_color_factor.0,
        0.0,
        1.0,
    )?;
    within(
        &format!("{at}.pbrMetallicRoughness.metallicFactor"),
        &[pbr.metallic_factor.0],
        0.0,
        1.0,
    )?;
    within(
        &format!("{at}.pbrMetallicRoughness.roughnessFactor"),
        &[pbr.roughness_factor.0],
        0.0,
        1.0,
    )?;
    within(
        &format!("{at}.emissiveFactor"),
        &m.emissive_factor.0,
        0.0,
        1.0,
    )?;
    if let Some(c) = &m.alpha_cutoff {
        within(&format!("{at}.alphaCutoff"), &[c.0], 0.0, f32::MAX)?;
    }
    if let Some(n) = &m.normal_texture {
        finite(&format!("{at}.normalTexture.scale"), &[n.scale])?;
    }
    if let Some(o) = &m.occlusion_texture {
        within(
            &format!("{at}.occlusionTexture.strength"),
            &[o.strength.0],
            0.0,
            1.0,
        )?;
    }
    if let Some(s) = m
        .extensions
        .as_ref()
        .and_then(|e| e.emissive_strength.as_ref())
    {
        within(
            &format!("{at}.extensions.KHR_materials_emissive_strength.emissiveStrength"),
            &[s.emissive_strength.0],
            0.0,
            MAX_EMISSIVE_STRENGTH,
        )?;
    }
    for (slot, info) in [
        (
            "pbrMetallicRoughness.baseColorTexture",
            &pbr.base_color_texture,
        ),
        (
            "pbrMetallicRoughness.metallicRoughnessTexture",
            &pbr.metallic_roughness_texture,
        ),
        ("emissiveTexture", &m.emissive_texture),
    ] {
        if let Some(info) = info {
            check_transform(
                &format!("{at}.{slot}.extensions.KHR_texture_transform"),
                info_transform(info),
            )?;
        }
    }
    Ok(())
}

fn check_node(at: &str, n: &json::Node) -> Result<(), Problem> {
    if let Some(m) = &n.matrix {
        finite(&format!("{at}.matrix"), m)?;
        // Column-major: the last row of an affine transform (what glTF allows, a matrix
        // that decomposes into translation, rotation and scale) is 0, 0, 0, 1.
        if [m[3], m[7], m[11], m[15]] != [0.0, 0.0, 0.0, 1.0] {
            return Err(format!(
                "{at}.matrix: its last row is {:?}, not [0, 0, 0, 1] (not an affine transform)",
                [m[3], m[7], m[11], m[15]]
            ));
        }
    }
    if let Some(t) = &n.translation {
        finite(&format!("{at}.translation"), t)?;
    }
    if let Some(r) = &n.rotation {
        finite(&format!("{at}.rotation"), &r.0)?;
    }
    if let Some(s) = &n.scale {
        finite(&format!("{at}.scale"), s)?;
    }
    Ok(())
}

fn check_camera(at: &str, c: &json::Camera) -> Result<(), Problem> {
    if let Some(p) = &c.perspective {
        finite(&format!("{at}.perspective.yfov"), &[p.yfov])?;
        finite(&format!("{at}.perspective.znear"), &[p.znear])?;
        if !(p.yfov > 0.0 && p.yfov < std::f32::consts::PI) {
            return Err(format!(
                "{at}.perspective.yfov: {} is outside (0, π) radians",
                p.yfov
            ));
        }
        if p.znear <= 0.0 {
            return Err(format!(
                "{at}.perspective.znear: {} must be positive",
                p.znear
            ));
        }
    }
    if let Some(o) = &c.orthographic {
        finite(
            &format!("{at}.orthographic"),
            &[o.xmag, o.ymag, o.zfar, o.znear],
        )?;
    }
    Ok(())
}
