//! What a WGSL module declares, as naga lays it out: struct sizes and member offsets,
//! `u32` constants, workgroup sizes. The Rust ↔ WGSL mirror tests (host `#[repr(C)]`
//! structs, host constants) compare their Rust twins against these, so every mirror is
//! checked by one helper.
//!
//! Modules come from [`super::shader::validate`] or
//! [`super::ShaderLibrary::validate`]: the composed, naga-validated shader.

/// A WGSL struct's layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WgslStruct {
    /// Size in bytes (naga's `span`, the stride in an array).
    pub size: u32,
    /// Member names and byte offsets, in declaration order.
    pub members: Vec<(String, u32)>,
}

/// The layout of the struct `name` in `module`, `None` when it declares no such struct.
pub fn wgsl_struct(module: &naga::Module, name: &str) -> Option<WgslStruct> {
    module.types.iter().find_map(|(_, ty)| match &ty.inner {
        naga::TypeInner::Struct { members, span } if ty.name.as_deref() == Some(name) => {
            Some(WgslStruct {
                size: *span,
                members: members
                    .iter()
                    .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
                    .collect(),
            })
        }
        _ => None,
    })
}

/// The size of the struct `name` in `module`.
///
/// # Panics
///
/// When `module` declares no struct `name` (these are test helpers: the message says
/// which struct is missing).
pub fn wgsl_size(module: &naga::Module, name: &str) -> usize {
    wgsl_struct(module, name)
        .unwrap_or_else(|| panic!("the shader declares no struct `{name}`"))
        .size as usize
}

/// Asserts that the WGSL struct `name` has the size of its host mirror `T`.
///
/// # Panics
///
/// When the struct is missing or the sizes differ, naming the struct and both sizes.
pub fn assert_mirrors<T>(module: &naga::Module, name: &str) {
    let wgsl = wgsl_size(module, name);
    let host = std::mem::size_of::<T>();
    assert_eq!(
        wgsl,
        host,
        "WGSL struct `{name}` is {wgsl} bytes but its host mirror `{}` is {host}",
        std::any::type_name::<T>()
    );
}

/// The value of the `u32` (or `i32`, or abstract integer) constant `name` in `module`, as
/// naga evaluated it; `None` when there is no such constant or it is not an integer.
pub fn wgsl_const_u32(module: &naga::Module, name: &str) -> Option<u32> {
    let constant = module
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some(name))
        .map(|(_, c)| c)?;
    match module.global_expressions[constant.init] {
        naga::Expression::Literal(naga::Literal::U32(v)) => Some(v),
        naga::Expression::Literal(naga::Literal::I32(v)) => u32::try_from(v).ok(),
        naga::Expression::Literal(naga::Literal::AbstractInt(v)) => u32::try_from(v).ok(),
        _ => None,
    }
}

/// Asserts that the WGSL constant `name` equals its host twin `host`.
///
/// # Panics
///
/// When the constant is missing, not an integer, or differs, naming it and both values.
pub fn assert_const(module: &naga::Module, name: &str, host: u32) {
    let wgsl = wgsl_const_u32(module, name)
        .unwrap_or_else(|| panic!("the shader declares no integer constant `{name}`"));
    assert_eq!(
        wgsl, host,
        "WGSL constant `{name}` is {wgsl:#x} but the host has {host:#x}"
    );
}

/// The workgroup size of the entry point `entry`, `None` when there is none.
pub fn workgroup_size(module: &naga::Module, entry: &str) -> Option<[u32; 3]> {
    module
        .entry_points
        .iter()
        .find(|e| e.name == entry)
        .map(|e| e.workgroup_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(source: &str) -> naga::Module {
        naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn reads_structs_constants_and_workgroups() {
        let m = module(
            "struct S { a: u32, b: vec3f, c: f32 }\n\
             const A: u32 = 0xFFFFFFFFu;\nconst B: u32 = 3u * 4u;\nconst C: i32 = -1;\n\
             const F: f32 = 1.0;\n\
             @group(0) @binding(0) var<storage, read_write> s: array<S>;\n\
             @compute @workgroup_size(8, 4) fn main() { s[0].a = A + B; }\n",
        );
        let s = wgsl_struct(&m, "S").unwrap();
        assert_eq!(s.size, 32);
        assert_eq!(
            s.members,
            [("a".into(), 0), ("b".into(), 16), ("c".into(), 28)]
        );
        assert_eq!(wgsl_size(&m, "S"), 32);
        assert_eq!(wgsl_struct(&m, "T"), None);
        assert_eq!(wgsl_const_u32(&m, "A"), Some(u32::MAX));
        assert_eq!(wgsl_const_u32(&m, "B"), Some(12));
        assert_eq!(wgsl_const_u32(&m, "C"), None, "negative");
        assert_eq!(wgsl_const_u32(&m, "F"), None, "not an integer");
        assert_eq!(workgroup_size(&m, "main"), Some([8, 4, 1]));
        assert_eq!(workgroup_size(&m, "other"), None);
        assert_const(&m, "B", 12);
        assert_mirrors::<[u32; 8]>(&m, "S");
        let wrong = std::panic::catch_unwind(|| assert_const(&m, "B", 13));
        assert!(wrong.is_err());
    }
}
