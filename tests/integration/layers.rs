//! The module layers of `docs/ARCHITECTURE.md` ("Layers"), checked against the source:
//! every `crate::`, `super::` and `self::` path (and every `use` of a child module) in
//! `src/**/*.rs` outside `#[cfg(test)]` items must name a module on the same line of the
//! order as the file's own module, or on an earlier line. Entries on one line are
//! independent of each other. Every entry is a top-level module (a folder or a file of
//! `src/`): a floor is a folder, never a module inside one. The order is read from the
//! document, so the two cannot drift apart; a top-level module that `src/lib.rs` declares
//! but the order lacks is an error too. The binary (`src/main.rs`, `src/cli/`) sits above
//! every layer and is not checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layer order: per line (lowest first), its entries (top-level modules).
struct Layers {
    lines: Vec<Vec<String>>,
}

impl Layers {
    /// Parse the first ```` ```text ```` block after the `## Layers` heading of `doc`:
    /// one line per layer, entries separated by `|`.
    fn from_doc(doc: &str) -> Layers {
        let section = doc
            .split("\n## Layers")
            .nth(1)
            .expect("docs/ARCHITECTURE.md has a `## Layers` section");
        let block = section
            .split("```text\n")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .expect("the Layers section has a ```text block");
        Layers::parse(block)
    }

    /// The lines of `block`, one layer each, entries separated by `|`; an entry that is
    /// not a top-level module (a path such as `scene::open`) is an error.
    fn parse(block: &str) -> Layers {
        let lines: Vec<Vec<String>> = block
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| l.split('|').map(|e| e.trim().to_string()).collect())
            .collect();
        for entry in lines.iter().flatten() {
            assert!(
                !entry.is_empty() && entry.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "the Layers order names `{entry}`: every entry must be a top-level module \
                 (no sub-layers inside a folder)"
            );
        }
        Layers { lines }
    }

    /// The entry (line, index on the line) of `module`'s top-level module.
    fn entry_of(&self, module: &[String]) -> Option<(usize, usize)> {
        let top = module.first()?;
        self.lines
            .iter()
            .enumerate()
            .find_map(|(l, line)| line.iter().position(|entry| entry == top).map(|e| (l, e)))
    }

    fn name(&self, (l, e): (usize, usize)) -> String {
        self.lines[l][e].clone()
    }

    fn top_level(&self) -> BTreeSet<String> {
        self.lines.iter().flatten().cloned().collect()
    }
}

/// Source text with comments, string and character literals blanked out (newlines
/// kept, so line numbers stay right).
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if c[i] == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&c, i) {
            // Raw string r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match c.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|h| c.get(j + h) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(&ch) => blank(&mut out, ch),
                }
                j += 1;
            }
            i = j;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            i += 1;
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                out.push(c[i]);
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn ident_before(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// `text` with every `#[cfg(test)]` item blanked out (newlines kept).
fn without_test_items(text: &str) -> String {
    let mut out: Vec<char> = text.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + marker.len() <= out.len() {
        if out[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        // The item ends at the first `;` or at the brace that closes its first `{`,
        // outside parentheses and brackets.
        let mut j = i + marker.len();
        let mut nest = 0i32;
        let mut end = out.len();
        while j < out.len() {
            match out[j] {
                '(' | '[' => nest += 1,
                ')' | ']' => nest -= 1,
                ';' if nest == 0 => {
                    end = j + 1;
                    break;
                }
                '{' if nest == 0 => {
                    let mut depth = 0;
                    while j < out.len() {
                        match out[j] {
                            '{' => depth += 1,
                            '}' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    end = (j + 1).min(out.len());
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        for ch in &mut out[i..end] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        i = end;
    }
    out.into_iter().collect()
}

/// Expand a use tree (`a::{b, c::{d, self}}`) into full paths.
fn expand_use_tree(tree: &str) -> Vec<String> {
    // One space between words (`b as c`), none around punctuation.
    let mut tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    for p in ["{", "}", ",", "::"] {
        tree = tree
            .replace(&format!(" {p}"), p)
            .replace(&format!("{p} "), p);
    }
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or_default();
        return vec![path.trim_end_matches("::*").to_string()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        for sub in expand_use_tree(part) {
            if sub == "self" || sub == "*" {
                out.push(prefix.to_string());
            } else if prefix.is_empty() {
                out.push(sub);
            } else {
                out.push(format!("{prefix}::{sub}"));
            }
        }
    }
    out
}

/// One path a file names: its line and the path as written.
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    line: usize,
    path: String,
}

/// Every module path `text` (stripped) names: `use` trees and inline `crate::`,
/// `super::` and `self::` paths.
fn references(text: &str) -> Vec<Reference> {
    let line_of = |pos: usize| text[..pos].matches('\n').count() + 1;
    let mut refs = Vec::new();
    let bytes = text.as_bytes();
    let mut pos = 0;
    while let Some(k) = text[pos..].find("use ") {
        let at = pos + k;
        pos = at + 4;
        let word_start =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if !word_start {
            continue;
        }
        let Some(end) = text[at..].find(';') else {
            break;
        };
        let tree = &text[at + 4..at + end];
        for path in expand_use_tree(tree) {
            refs.push(Reference {
                line: line_of(at),
                path,
            });
        }
        pos = at + end;
    }
    for root in ["crate::", "super::", "self::"] {
        let mut pos = 0;
        while let Some(k) = text[pos..].find(root) {
            let at = pos + k;
            pos = at + root.len();
            if at > 0
                && (bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b':')
            {
                continue;
            }
            let len = text[at..]
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == ':'))
                .unwrap_or(text.len() - at);
            refs.push(Reference {
                line: line_of(at),
                path: text[at..at + len].trim_end_matches(':').to_string(),
            });
        }
    }
    refs
}

/// The module path of a file below `src/` (`scene/open.rs` → `open`,
/// `scene/mod.rs` → `scene`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The absolute module path `path` (as written in `module`, whose child modules are
/// `children`) names, or `None` when it is not a path into the crate.
fn resolve(module: &[String], children: &[String], path: &str) -> Option<Vec<String>> {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let first = *segs.first()?;
    let mut base: Vec<String> = match first {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut m = module.to_vec();
            let mut rest = &segs[..];
            while rest.first() == Some(&"super") {
                m.pop();
                rest = &rest[1..];
            }
            m.extend(rest.iter().map(|s| s.to_string()));
            return Some(m);
        }
        child if children.iter().any(|c| c == child) => module.to_vec(),
        _ => return None,
    };
    let skip = usize::from(first == "crate" || first == "self");
    base.extend(segs[skip..].iter().map(|s| s.to_string()));
    Some(base)
}

/// A violation: file, line, what it names, and the two layers.
#[derive(Debug, Clone, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    path: String,
    from: String,
    to: String,
}

/// Check one file of module `module` against `layers`.
fn check_file(
    layers: &Layers,
    file: &str,
    module: &[String],
    children: &[String],
    src: &str,
) -> Vec<Violation> {
    let Some(own) = layers.entry_of(module) else {
        return Vec::new();
    };
    let text = without_test_items(&strip(src));
    let mut out = Vec::new();
    for r in references(&text) {
        let Some(target) = resolve(module, children, &r.path) else {
            continue;
        };
        let Some(dst) = layers.entry_of(&target) else {
            continue;
        };
        if dst != own && dst.0 >= own.0 {
            out.push(Violation {
                file: file.to_string(),
                line: r.line,
                path: r.path.clone(),
                from: layers.name(own),
                to: layers.name(dst),
            });
        }
    }
    out.sort_by(|a, b| (a.line, &a.path).cmp(&(b.line, &b.path)));
    out.dedup();
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Child modules of the module whose file is `file`: `.rs` files and folders beside a
/// `mod.rs`/`lib.rs`, or in the folder named like a plain file.
fn children_of(file: &Path) -> Vec<String> {
    let dir = match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib") => file.parent().map(Path::to_path_buf),
        Some(stem) => file.parent().map(|p| p.join(stem)),
        None => None,
    };
    let Some(dir) = dir.filter(|d| d.is_dir()) else {
        return Vec::new();
    };
    std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p.file_stem()?.to_str()?.to_string();
            (p.is_dir() || p.extension().is_some_and(|x| x == "rs")).then_some(name)
        })
        .filter(|n| n != "mod")
        .collect()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn modules_import_only_lower_layers() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("read doc");
    let layers = Layers::from_doc(&doc);
    // Every library module is placed.
    let lib = strip(&std::fs::read_to_string(root().join("src/lib.rs")).expect("lib.rs"));
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').trim().to_string())
        .collect();
    let placed = layers.top_level();
    let missing: Vec<_> = declared.difference(&placed).collect();
    assert!(
        missing.is_empty(),
        "modules missing from the Layers order: {missing:?}"
    );
    let unknown: Vec<_> = placed.difference(&declared).collect();
    assert!(
        unknown.is_empty(),
        "the Layers order names unknown modules: {unknown:?}"
    );

    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut violations = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("below src");
        if rel == Path::new("main.rs") || rel.starts_with("cli") || rel == Path::new("lib.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("read source");
        let module = module_of(rel);
        violations.extend(check_file(
            &layers,
            &rel.display().to_string(),
            &module,
            &children_of(f),
            &text,
        ));
    }
    let report: Vec<String> = violations
        .iter()
        .map(|v| {
            format!(
                "src/{}:{}: {} ({} → {})",
                v.file, v.line, v.path, v.from, v.to
            )
        })
        .collect();
    assert!(
        violations.is_empty(),
        "{} imports of a module not below the importer (docs/ARCHITECTURE.md, Layers):\n{}",
        violations.len(),
        report.join("\n")
    );
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

const ORDER: &str = "
io
scene
texture
open
render | cluster
app
";

#[test]
fn a_lower_layer_importing_a_higher_one_is_flagged() {
    let layers = Layers::parse(ORDER);
    let src = r#"
//! Docs naming crate::app::run are not imports.
use crate::{io, texture::{self, Texel}};
use crate::open::open;
fn f() { let s = "crate::app::x"; crate::render::draw(); }
#[cfg(test)]
mod tests {
    use crate::app::App;
}
"#;
    let v = check_file(
        &layers,
        "scene/description.rs",
        &s(&["scene", "description"]),
        &[],
        src,
    );
    let got: Vec<(usize, &str, &str)> = v
        .iter()
        .map(|v| (v.line, v.path.as_str(), v.to.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (3, "crate::texture", "texture"),
            (3, "crate::texture::Texel", "texture"),
            (4, "crate::open::open", "open"),
            (5, "crate::render::draw", "render"),
        ]
    );
}

#[test]
fn siblings_are_independent_and_a_folder_is_one_floor() {
    let layers = Layers::parse(ORDER);
    let render = "use crate::cluster::Strategy;\nuse crate::open::open;\nuse crate::io::x;\n";
    let v = check_file(&layers, "render/mod.rs", &s(&["render"]), &[], render);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (v[0].from.as_str(), v[0].to.as_str()),
        ("render", "cluster")
    );
    // A file inside a folder stands on its folder's floor: it may use its siblings and
    // lower floors, and nothing above.
    let inner = "use super::Scene;\nuse crate::io::write;\nuse self::helper::x;\n";
    assert!(check_file(&layers, "scene/gltf.rs", &s(&["scene", "gltf"]), &[], inner).is_empty());
    let up = "use crate::open::open;\n";
    let v = check_file(&layers, "scene/gltf.rs", &s(&["scene", "gltf"]), &[], up);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].from.as_str(), v[0].to.as_str()), ("scene", "open"));
}

#[test]
#[should_panic(expected = "no sub-layers inside a folder")]
fn a_sub_layer_entry_is_refused() {
    Layers::parse("io\nscene\nscene::open\n");
}

#[test]
fn use_trees_expand() {
    assert_eq!(
        expand_use_tree("crate::a::{self, b as c, d::{e, f}, *}"),
        s(&[
            "crate::a",
            "crate::a::b",
            "crate::a::d::e",
            "crate::a::d::f",
            "crate::a"
        ])
    );
    assert_eq!(expand_use_tree("super::x::*"), s(&["super::x"]));
    assert_eq!(module_of(Path::new("scene/mod.rs")), s(&["scene"]));
    assert_eq!(
        module_of(Path::new("render/passes/ntc_decode.rs")),
        s(&["render", "passes", "ntc_decode"])
    );
    assert_eq!(
        resolve(
            &s(&["render", "passes", "x"]),
            &[],
            "super::super::Renderer"
        ),
        Some(s(&["render", "Renderer"]))
    );
    assert_eq!(resolve(&s(&["render"]), &[], "glam::Vec3"), None);
}

#[test]
fn literals_and_comments_are_blank() {
    let text = strip(
        "a /* crate::x /* nested */ */ b // crate::y\n\"crate::z\" r#\"crate::w\"# 'c' '\\'' 'a c",
    );
    assert!(!text.contains("crate::"), "{text}");
    assert!(
        text.contains('a') && text.contains('b') && text.ends_with("'a c"),
        "{text}"
    );
    assert_eq!(strip("x\n/* a\nb */\ny").lines().count(), 4);
}
