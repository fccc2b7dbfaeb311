//! WGSL loading: the embedded shader tree, a small preprocessor, naga validation and
//! shader-module creation.
//!
//! Every `.wgsl` file under `shaders/` is embedded at compile time by `build.rs` and
//! addressed by its path relative to `shaders/`, with `/` separators
//! (`"common/math.wgsl"`). Shaders are only ever written in `.wgsl` files; Rust code never
//! builds WGSL text (STYLE pattern 3).
//!
//! # Preprocessor
//!
//! Directives are lines whose first non-blank character is `#`; a trailing `// comment`
//! on a directive line is ignored.
//!
//! - `#import "common/math.wgsl"` — splices in that file (path relative to `shaders/`,
//!   quotes optional). Each file is included at most once per composed output, so diamond
//!   imports are fine; an import that re-enters a file still being imported is a cycle and
//!   an error naming the importing file and line.
//! - `#ifdef NAME`, `#ifndef NAME`, `#else`, `#endif` — nestable, must be balanced within
//!   each file. `NAME` is defined when it appears in the define list, whatever its value.
//! - `${NAME}` anywhere in an active line is replaced by NAME's value from the define list
//!   (an undefined name is an error). This carries host↔shader constants (tile sizes,
//!   layer widths) from one Rust definition into the shader. Substitutions nest, innermost
//!   first: `${NTC_HIDDEN_${L}}` reads the define named by `L`'s value.
//! - `#for NAME in START..END` … `#endfor` — emits the enclosed lines once per integer
//!   `NAME` from START to END − 1, with `${NAME}` replaced by the value (nestable; the body
//!   must balance its own `#ifdef`s). START and END are integer expressions after `${}`
//!   substitution: literals (an optional `u` suffix), `+ - * / %`, parentheses, `min(a, b)`
//!   and `max(a, b)`. This unrolls loops into code with constant indices: drivers keep
//!   arrays indexed by loop counters in local memory (measured on an NVIDIA H200, where
//!   naga's loops are not unrolled).
//! - WGSL global directives (`enable …;`, `requires …;`) are hoisted, deduplicated, to the
//!   top of the output, so an imported file may `enable f16;` itself.
//!
//! The define list is a [`Defines`]: each name once, with its value.
//!
//! # Declared variants
//!
//! An entry shader may declare, in `//` comment lines at its very top, the defines it is
//! validated with:
//!
//! ```text
//! // defines: TILE=8, KERNEL_F32
//! // variants: KERNEL_F32 | KERNEL_F16, WIDE=1
//! // variants: - | USE_SUBGROUPS
//! ```
//!
//! `defines:` gives defaults (a bare `NAME` means `NAME=1`). Each `variants:` line gives
//! alternatives separated by `|`, each a comma-separated define list (`-` or nothing for
//! none, as in `// variants: | ALPHA_TEST`), and owns every name it mentions. The
//! declared define sets are every combination of one alternative per `variants:` line
//! (4 sets above), each applied to the defaults by first removing the line's names and
//! then adding the alternative's pairs — so `KERNEL_F32 | KERNEL_F16` never defines both,
//! whatever the defaults say. `tests/integration/shaders.rs` validates every entry shader in every
//! declared set; see [`ShaderHeader`].
//!
//! # Errors
//!
//! Composition keeps a line map from output lines to (file, line), so a naga parse or
//! validation error is reported with naga's own source excerpt of the composed text
//! *and* the original `shaders/<file>:<line>:<column>` it came from.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

pub use super::defines::Defines;
use super::layout::{Slot, declared_slots};
use super::{GpuContext, ShaderChecks};

include!(concat!(env!("OUT_DIR"), "/shaders.rs"));

/// A location in an original shader file (not the composed output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    /// Path relative to `shaders/`.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in bytes, as naga counts).
    pub column: u32,
}

impl fmt::Display for SourceLocation {
    /// `shaders/<file>:<line>:<column>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shaders/{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Formats an optional location as ` at <location>` for error messages.
fn at(location: &Option<SourceLocation>) -> String {
    location
        .as_ref()
        .map(|l| format!(" at {l}"))
        .unwrap_or_default()
}

/// Errors from loading, composing, validating or creating a shader. Every variant names
/// the shader (and, where known, the original file and line).
#[derive(Debug, thiserror::Error)]
pub enum ShaderError {
    /// The requested entry shader does not exist.
    #[error(
        "shader `{path}` not found: expected shaders/{path} (files are embedded at build \
         time; rebuild after adding one)"
    )]
    NotFound {
        /// Path relative to `shaders/`.
        path: String,
    },
    /// A preprocessor error (`#import` missing or cyclic, unbalanced `#ifdef`, unknown
    /// directive, undefined `${NAME}`, malformed header).
    #[error("shaders/{file}:{line}: {message}")]
    Preprocess {
        /// File the directive is in, relative to `shaders/`.
        file: String,
        /// 1-based line of the directive.
        line: u32,
        /// What is wrong and what to do.
        message: String,
    },
    /// naga's WGSL front end rejected the composed source.
    #[error("shader `{path}`: WGSL parse error{}:\n{report}", at(location))]
    Parse {
        /// The entry shader.
        path: String,
        /// Where in the original files the error points, when naga gave a span.
        location: Option<SourceLocation>,
        /// naga's report over the composed source, plus the original location.
        report: String,
    },
    /// naga's validator rejected the module.
    #[error("shader `{path}`: WGSL validation error{}:\n{report}", at(location))]
    Validation {
        /// The entry shader.
        path: String,
        /// Where in the original files the error points, when naga gave a span.
        location: Option<SourceLocation>,
        /// naga's report over the composed source, plus the original location.
        report: String,
    },
    /// wgpu rejected the module (usually a capability the device lacks, e.g. f16), or
    /// the shader compiler panicked creating it.
    #[error("shader `{path}`: creating the wgpu shader module failed: {message}")]
    Device {
        /// The entry shader.
        path: String,
        /// wgpu's validation message.
        message: String,
    },
}

/// A composed shader: the WGSL text handed to naga/wgpu and the map back to the files.
#[derive(Clone, Debug)]
pub struct ComposedShader {
    /// The entry shader's path relative to `shaders/`.
    pub path: String,
    /// The composed WGSL.
    pub source: String,
    /// Every file included, entry shader first, in inclusion order.
    pub files: Vec<String>,
    /// For each output line (0-based index): index into `files` and 1-based line there.
    line_map: Vec<(u32, u32)>,
}

impl ComposedShader {
    /// The original file and line of 1-based output line `line` (column passed through).
    pub fn origin(&self, line: u32, column: u32) -> Option<SourceLocation> {
        let &(file, original) = self.line_map.get(line.checked_sub(1)? as usize)?;
        Some(SourceLocation {
            file: self.files[file as usize].clone(),
            line: original,
            column,
        })
    }

    /// Parses with naga's WGSL front end and validates with every capability enabled
    /// (f16, subgroups, …; device capabilities are checked later by wgpu).
    pub fn validate(&self) -> Result<(naga::Module, naga::valid::ModuleInfo), ShaderError> {
        let report_path = format!("{} [composed]", self.path);
        let module = naga::front::wgsl::parse_str(&self.source).map_err(|e| {
            // naga puts the primary span first.
            let emitted = e.emit_to_string_with_path(&self.source, &report_path);
            let (report, location) = self.explain(emitted, e.labels(), |labels| labels.first());
            ShaderError::Parse {
                path: self.path.clone(),
                report,
                location,
            }
        })?;
        let mut validator = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        );
        let info = validator.validate(&module).map_err(|e| {
            let emitted = e.emit_to_string_with_path(&self.source, &report_path);
            let spans = e.spans().map(|(span, label)| (*span, label.as_str()));
            // Validation spans go from the enclosing item to the culprit: the shortest is
            // the most specific.
            let (report, location) = self.explain(emitted, spans, |labels| {
                labels.iter().min_by_key(|(_, length, _)| *length)
            });
            ShaderError::Validation {
                path: self.path.clone(),
                report,
                location,
            }
        })?;
        Ok((module, info))
    }

    /// Maps naga's labelled spans over the composed source to original locations, with
    /// each span's length in bytes.
    /// A naga error's report and location: `emitted`, naga's report over the composed
    /// source, followed by each label's original location; the location is the label
    /// `culprit` picks from the labels (original location, span length, text).
    fn explain<'a>(
        &self,
        emitted: String,
        labels: impl Iterator<Item = (naga::Span, &'a str)>,
        culprit: impl Fn(&[Label]) -> Option<&Label>,
    ) -> (String, Option<SourceLocation>) {
        let labels: Vec<Label> = labels
            .filter(|(span, _)| span.is_defined())
            .filter_map(|(span, label)| {
                let l = span.location(&self.source);
                let origin = self.origin(l.line_number, l.line_position)?;
                Some((origin, l.length, label.to_owned()))
            })
            .collect();
        let location = culprit(&labels).map(|(l, _, _)| l.clone());
        (report(emitted, &labels), location)
    }
}

/// A label of a naga error: its original location, its span's length and its text.
type Label = (SourceLocation, u32, String);

/// naga's report over the composed source followed by each label's original location.
fn report(naga_report: String, labels: &[Label]) -> String {
    let mut text = naga_report.trim_end().to_owned();
    for (location, _, label) in labels {
        text.push_str(&format!("\n  = at {location}"));
        if !label.is_empty() {
            text.push_str(&format!(": {label}"));
        }
    }
    text
}

/// Defaults and variant alternatives an entry shader declares in its leading comments
/// (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShaderHeader {
    /// `// defines:` pairs.
    pub defaults: Defines,
    /// One entry per `// variants:` line; each holds its alternatives' define lists.
    pub variants: Vec<Vec<Defines>>,
}

impl ShaderHeader {
    /// Parses the leading `//` lines of `source`. Errors carry the 1-based line.
    pub fn parse(source: &str) -> Result<Self, (u32, String)> {
        let mut header = Self::default();
        for (index, line) in source.lines().enumerate() {
            let Some(comment) = line.trim_start().strip_prefix("//") else {
                break;
            };
            let comment = comment.trim();
            let line_no = index as u32 + 1;
            if let Some(list) = comment.strip_prefix("defines:") {
                header
                    .defaults
                    .extend(&parse_define_list(list).map_err(|m| (line_no, m))?);
            } else if let Some(list) = comment.strip_prefix("variants:") {
                let alternatives = list
                    .split('|')
                    .map(|alt| match alt.trim() {
                        "-" => Ok(Defines::new()),
                        alt => parse_define_list(alt),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|m| (line_no, m))?;
                header.variants.push(alternatives);
            }
        }
        Ok(header)
    }

    /// Every declared define set: the defaults overridden by each combination of one
    /// alternative per `variants:` line (just the defaults when there is none).
    pub fn define_sets(&self) -> Vec<Defines> {
        let mut sets = vec![self.defaults.clone()];
        for alternatives in &self.variants {
            // A `variants:` line owns every name it mentions: each alternative first
            // removes all of them, so `KERNEL_F32 | KERNEL_F16` never defines both.
            let owned: HashSet<&str> = alternatives
                .iter()
                .flat_map(Defines::iter)
                .map(|(name, _)| name)
                .collect();
            sets = sets
                .iter()
                .flat_map(|set| {
                    let owned = &owned;
                    alternatives.iter().map(move |alt| {
                        let kept: Defines =
                            set.iter().filter(|(n, _)| !owned.contains(n)).collect();
                        kept.merged(alt)
                    })
                })
                .collect();
        }
        sets
    }
}

/// Parses `A=1, B, C = x` into pairs (`B` means `B=1`).
fn parse_define_list(list: &str) -> Result<Defines, String> {
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), v.trim()),
                None => (item, "1"),
            };
            if is_identifier(name) {
                Ok((name.to_owned(), value.to_owned()))
            } else {
                Err(format!(
                    "`{item}` is not a define (expected NAME or NAME=value)"
                ))
            }
        })
        .collect()
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Resolves shader paths to sources and composes, validates and creates shaders.
///
/// [`ShaderLibrary::embedded`] serves the files built into the binary; tests build one
/// over in-memory sources with [`ShaderLibrary::new`] or [`ShaderLibrary::from_files`].
pub struct ShaderLibrary<'s> {
    provider: Box<FileProvider<'s>>,
}

/// Maps a path relative to `shaders/` to that file's source.
type FileProvider<'s> = dyn Fn(&str) -> Option<&'s str> + 's;

impl fmt::Debug for ShaderLibrary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShaderLibrary").finish_non_exhaustive()
    }
}

impl ShaderLibrary<'static> {
    /// The shaders embedded at build time from `shaders/`.
    pub fn embedded() -> Self {
        Self::new(shader_source)
    }
}

impl<'s> ShaderLibrary<'s> {
    /// A library over any file provider: path relative to `shaders/` → source.
    pub fn new(provider: impl Fn(&str) -> Option<&'s str> + 's) -> Self {
        Self {
            provider: Box::new(provider),
        }
    }

    /// A library over (path, source) pairs.
    pub fn from_files(files: &'s [(&'s str, &'s str)]) -> Self {
        Self::new(move |path| files.iter().find(|(p, _)| *p == path).map(|(_, s)| *s))
    }

    /// The raw source of `path`, if it exists.
    pub fn source(&self, path: &str) -> Option<&'s str> {
        (self.provider)(path)
    }

    /// Resolves imports and conditionals of `path` under `defines`.
    pub fn compose(&self, path: &str, defines: &Defines) -> Result<ComposedShader, ShaderError> {
        let source = self.source(path).ok_or_else(|| ShaderError::NotFound {
            path: path.to_owned(),
        })?;
        let mut composer = Composer {
            library: self,
            defines,
            files: Vec::new(),
            included: HashSet::new(),
            stack: Vec::new(),
            directives: Vec::new(),
            body: Vec::new(),
            loop_vars: Vec::new(),
        };
        composer.include(path, source)?;
        let mut text = String::new();
        let mut line_map = Vec::new();
        for (line, origin) in composer.directives.into_iter().chain(composer.body) {
            text.push_str(&line);
            text.push('\n');
            line_map.push(origin);
        }
        Ok(ComposedShader {
            path: path.to_owned(),
            source: text,
            files: composer.files,
            line_map,
        })
    }

    /// Composes `path` and validates it with naga (no GPU needed).
    pub fn validate(&self, path: &str, defines: &Defines) -> Result<naga::Module, ShaderError> {
        Ok(self.compose(path, defines)?.validate()?.0)
    }

    /// The defaults and variants `path` declares in its leading comments.
    pub fn header(&self, path: &str) -> Result<ShaderHeader, ShaderError> {
        let source = self.source(path).ok_or_else(|| ShaderError::NotFound {
            path: path.to_owned(),
        })?;
        ShaderHeader::parse(source).map_err(|(line, message)| ShaderError::Preprocess {
            file: path.to_owned(),
            line,
            message,
        })
    }

    /// Composes, validates with naga, then creates the module on `ctx`'s device; wgpu's
    /// own validation (device capabilities) is caught in an error scope, and a panic of
    /// the shader compiler (see [`catch_compiler_panic`]) is a [`ShaderError::Device`]
    /// naming the shader and its defines.
    pub fn create_shader_module(
        &self,
        ctx: &GpuContext,
        path: &str,
        defines: &Defines,
    ) -> Result<wgpu::ShaderModule, ShaderError> {
        self.compile(ctx, path, defines)
            .map(|compiled| compiled.module)
    }

    /// [`Self::create_shader_module`], also returning naga's module of the composed
    /// source and its validation info (what a pipeline reads its declared bindings from).
    pub fn compile(
        &self,
        ctx: &GpuContext,
        path: &str,
        defines: &Defines,
    ) -> Result<CompiledShader, ShaderError> {
        let composed = self.compose(path, defines)?;
        let (ir, info) = composed.validate()?;
        let descriptor = wgpu::ShaderModuleDescriptor {
            label: Some(path),
            source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(&composed.source)),
        };
        let created = catch_compiler_panic(|| {
            ctx.error_scope(|| match ctx.shader_checks {
                ShaderChecks::On => ctx.device.create_shader_module(descriptor),
                #[expect(unsafe_code, reason = "wgpu's shader modules without runtime checks")]
                // SAFETY: the default, unless `NEUROTEX_SHADER_CHECKS=on`. The module is one
                // of this crate's shaders, composed and validated by naga above; its loops end by
                // their own conditions and its indices stay in range on the inputs the
                // CPU-side checks let through (tests compare the results with and
                // without the checks, bit for bit).
                ShaderChecks::Off => unsafe {
                    ctx.device.create_shader_module_trusted(
                        descriptor,
                        ShaderChecks::Off.runtime_checks(),
                    )
                },
            })
        })
        .map_err(|panic| ShaderError::Device {
            path: path.to_owned(),
            message: format!(
                "the shader compiler panicked (a wgpu/naga bug) with defines [{defines}]: {panic}"
            ),
        })?;
        let module = created.map_err(|e| ShaderError::Device {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Ok(CompiledShader { module, ir, info })
    }
}

/// A shader module with naga's module of its composed source and the validation info.
#[derive(Debug)]
pub struct CompiledShader {
    /// The device's module.
    pub module: wgpu::ShaderModule,
    /// naga's module.
    pub ir: naga::Module,
    /// naga's validation info (which globals each entry point uses).
    pub info: naga::valid::ModuleInfo,
}

impl CompiledShader {
    /// The bindings of group `group` that the entry points `entries` use (every binding
    /// the module declares when `entries` is empty), as [`declared_slots`] reads them.
    pub fn declared_slots(&self, group: u32, entries: &[&str]) -> Result<Vec<(u32, Slot)>, String> {
        let mut infos = Vec::with_capacity(entries.len());
        for &name in entries {
            let index = self
                .ir
                .entry_points
                .iter()
                .position(|e| e.name == name)
                .ok_or_else(|| format!("no entry point `{name}`"))?;
            infos.push(self.info.get_entry_point(index));
        }
        declared_slots(&self.ir, group, |handle| {
            infos.is_empty() || infos.iter().any(|info| !info[handle].is_empty())
        })
    }
}

/// Runs `f` (a wgpu call that compiles shaders: module or pipeline creation), turning a
/// panic into `Err(panic message)` so that a shader-compiler bug costs one shader, not
/// the process.
///
/// naga's backends, which wgpu runs when a module or pipeline is created (the Vulkan
/// backend: when the pipeline is), have internal `unreachable!`s that some modules the
/// validator accepts still reach (e.g. naga 30's SPIR-V writer on a `coopStore` whose
/// index is computed in its arguments; `tests/integration/shaders.rs` compiles every shader variant
/// to SPIR-V to catch those before a device does). wgpu's error scopes and locks are
/// guards released while unwinding, so the device stays usable; the panic message is
/// still printed by the panic hook. Useless with `panic = "abort"`.
pub fn catch_compiler_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned())
    })
}

/// State of one `#ifdef`/`#ifndef` block.
struct Conditional {
    /// Whether lines are emitted in the current branch.
    active: bool,
    /// Whether the enclosing region is active.
    parent_active: bool,
    /// Whether the `#if…` condition held.
    taken: bool,
    seen_else: bool,
    line: u32,
}

/// One composition in progress.
struct Composer<'l, 's, 'd> {
    library: &'l ShaderLibrary<'s>,
    defines: &'d Defines,
    files: Vec<String>,
    included: HashSet<String>,
    /// Files currently being included, outermost first (for cycle detection).
    stack: Vec<String>,
    /// Hoisted `enable`/`requires` lines with their origin.
    directives: Vec<(String, (u32, u32))>,
    body: Vec<(String, (u32, u32))>,
    /// Values of the enclosing `#for` variables, outermost first.
    loop_vars: Vec<(String, String)>,
}

impl Composer<'_, '_, '_> {
    fn define(&self, name: &str) -> Option<&str> {
        self.loop_vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .or_else(|| self.defines.get(name))
    }

    fn include(&mut self, path: &str, source: &str) -> Result<(), ShaderError> {
        let file_index = self.files.len() as u32;
        self.files.push(path.to_owned());
        self.included.insert(path.to_owned());
        self.stack.push(path.to_owned());
        let err = |line: u32, message: String| ShaderError::Preprocess {
            file: path.to_owned(),
            line,
            message,
        };

        let lines: Vec<(u32, &str)> = source
            .lines()
            .enumerate()
            .map(|(i, l)| (i as u32 + 1, l))
            .collect();
        let mut conditionals: Vec<Conditional> = Vec::new();
        self.process(path, file_index, &lines, &mut conditionals)?;
        if let Some(open) = conditionals.last() {
            return Err(err(
                open.line,
                "#ifdef/#ifndef is never closed by #endif in this file".to_owned(),
            ));
        }
        self.stack.pop();
        Ok(())
    }

    /// Preprocesses `lines` (1-based numbers and text of file `path`, index `file_index`)
    /// into the output, with the file's open conditionals in `conditionals`.
    fn process(
        &mut self,
        path: &str,
        file_index: u32,
        lines: &[(u32, &str)],
        conditionals: &mut Vec<Conditional>,
    ) -> Result<(), ShaderError> {
        let err = |line: u32, message: String| ShaderError::Preprocess {
            file: path.to_owned(),
            line,
            message,
        };
        let mut index = 0;
        while index < lines.len() {
            let (line_no, raw) = lines[index];
            index += 1;
            let active = conditionals.last().is_none_or(|c| c.active);
            let trimmed = raw.trim_start();
            if let Some(directive) = trimmed.strip_prefix('#') {
                let directive = directive.split("//").next().unwrap_or_default().trim();
                let (name, argument) = directive
                    .split_once(char::is_whitespace)
                    .map(|(n, a)| (n, a.trim()))
                    .unwrap_or((directive, ""));
                match name {
                    "for" => {
                        let end = matching_endfor(lines, index).ok_or_else(|| {
                            err(
                                line_no,
                                "#for is never closed by #endfor in this file".to_owned(),
                            )
                        })?;
                        let block = &lines[index..end];
                        index = end + 1;
                        if !active {
                            continue;
                        }
                        let (var, start, stop) =
                            self.for_range(argument).map_err(|m| err(line_no, m))?;
                        for value in start..stop {
                            self.loop_vars.push((var.clone(), value.to_string()));
                            let depth = conditionals.len();
                            self.process(path, file_index, block, conditionals)?;
                            if conditionals.len() != depth {
                                return Err(err(
                                    line_no,
                                    "the #for body does not balance its #ifdef/#ifndef and #endif"
                                        .to_owned(),
                                ));
                            }
                            self.loop_vars.pop();
                        }
                    }
                    "endfor" => {
                        return Err(err(line_no, "#endfor without #for".to_owned()));
                    }
                    "ifdef" | "ifndef" => {
                        if !is_identifier(argument) {
                            return Err(err(
                                line_no,
                                format!("#{name} needs one define name, got `{argument}`"),
                            ));
                        }
                        let taken = self.define(argument).is_some() == (name == "ifdef");
                        conditionals.push(Conditional {
                            active: active && taken,
                            parent_active: active,
                            taken,
                            seen_else: false,
                            line: line_no,
                        });
                    }
                    "else" => {
                        let Some(c) = conditionals.last_mut() else {
                            return Err(err(line_no, "#else without #ifdef/#ifndef".to_owned()));
                        };
                        if c.seen_else {
                            return Err(err(
                                line_no,
                                format!("second #else for the #if… at line {}", c.line),
                            ));
                        }
                        c.seen_else = true;
                        c.active = c.parent_active && !c.taken;
                    }
                    "endif" => {
                        if conditionals.pop().is_none() {
                            return Err(err(line_no, "#endif without #ifdef/#ifndef".to_owned()));
                        }
                    }
                    "import" => {
                        if active {
                            self.import(path, line_no, argument)?;
                        }
                    }
                    other => {
                        return Err(err(
                            line_no,
                            format!(
                                "unknown directive `#{other}` (known: #import, #ifdef, #ifndef, #else, #endif, #for, #endfor)"
                            ),
                        ));
                    }
                }
                continue;
            }
            if !active {
                continue;
            }
            let text = self.substitute(raw).map_err(|m| err(line_no, m))?;
            let origin = (file_index, line_no);
            let code = text.trim_start();
            if code.starts_with("enable ") || code.starts_with("requires ") {
                if !self.directives.iter().any(|(d, _)| d.trim() == code.trim()) {
                    self.directives.push((code.trim_end().to_owned(), origin));
                }
            } else {
                self.body.push((text, origin));
            }
        }
        Ok(())
    }

    /// `NAME in START..END` of a `#for`, with START and END substituted and evaluated.
    fn for_range(&self, argument: &str) -> Result<(String, i64, i64), String> {
        let usage = || format!("#for needs `NAME in START..END`, got `{argument}`");
        let (var, range) = argument.split_once(" in ").ok_or_else(usage)?;
        let var = var.trim();
        if !is_identifier(var) {
            return Err(usage());
        }
        let range = self.substitute(range)?;
        let (start, stop) = range.split_once("..").ok_or_else(usage)?;
        Ok((var.to_owned(), eval_int(start)?, eval_int(stop)?))
    }

    fn import(&mut self, importer: &str, line: u32, argument: &str) -> Result<(), ShaderError> {
        let target = argument.trim().trim_matches('"').trim();
        let err = |message: String| ShaderError::Preprocess {
            file: importer.to_owned(),
            line,
            message,
        };
        if target.is_empty() {
            return Err(err(
                "#import needs a path, e.g. #import \"common/math.wgsl\"".to_owned(),
            ));
        }
        if self.stack.iter().any(|f| f == target) {
            let mut chain = self.stack.clone();
            chain.push(target.to_owned());
            return Err(err(format!(
                "#import \"{target}\" forms a cycle: {}",
                chain.join(" → ")
            )));
        }
        if self.included.contains(target) {
            return Ok(());
        }
        let source = self.library.source(target).ok_or_else(|| {
            err(format!(
                "#import \"{target}\": no such shader (paths are relative to shaders/, e.g. \"common/math.wgsl\")"
            ))
        })?;
        self.include(target, source)
    }

    /// Replaces every `${NAME}` with its define value, innermost first (so `${A_${I}}`
    /// reads the define named by `I`'s value).
    fn substitute(&self, line: &str) -> Result<String, String> {
        let mut out = line.to_owned();
        while let Some(mut start) = out.find("${") {
            // The innermost `${`: no other `${` before its closing brace.
            let end = loop {
                let close = out[start + 2..]
                    .find('}')
                    .map(|e| start + 2 + e)
                    .ok_or_else(|| "unterminated `${` (expected `${NAME}`)".to_owned())?;
                match out[start + 2..close].find("${") {
                    Some(inner) => start += 2 + inner,
                    None => break close,
                }
            };
            let name = out[start + 2..end].trim();
            let value = self.define(name).ok_or_else(|| {
                format!(
                    "`${{{name}}}` is not in the define list; set {name} in the defines it is composed with"
                )
            })?;
            out.replace_range(start..=end, value);
        }
        Ok(out)
    }
}

/// Index in `lines` of the `#endfor` closing the `#for` whose body starts at `from`.
fn matching_endfor(lines: &[(u32, &str)], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, (_, raw)) in lines.iter().enumerate().skip(from) {
        let Some(directive) = raw.trim_start().strip_prefix('#') else {
            continue;
        };
        let name = directive
            .split(|c: char| c.is_whitespace() || c == '/')
            .next();
        match name {
            Some("for") => depth += 1,
            Some("endfor") if depth == 0 => return Some(i),
            Some("endfor") => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Evaluates an integer expression of `#for` bounds: literals (optional `u` suffix),
/// `+ - * / %`, parentheses, `min(a, b)`, `max(a, b)`.
fn eval_int(text: &str) -> Result<i64, String> {
    struct Parser<'a> {
        s: &'a [u8],
        at: usize,
    }
    impl Parser<'_> {
        fn skip(&mut self) {
            while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
                self.at += 1;
            }
        }
        fn eat(&mut self, c: u8) -> bool {
            self.skip();
            let hit = self.s.get(self.at) == Some(&c);
            self.at += usize::from(hit);
            hit
        }
        fn sum(&mut self) -> Result<i64, String> {
            let mut v = self.product()?;
            loop {
                if self.eat(b'+') {
                    v += self.product()?;
                } else if self.eat(b'-') {
                    v -= self.product()?;
                } else {
                    return Ok(v);
                }
            }
        }
        fn product(&mut self) -> Result<i64, String> {
            let mut v = self.atom()?;
            loop {
                let op = if self.eat(b'*') {
                    b'*'
                } else if self.eat(b'/') {
                    b'/'
                } else if self.eat(b'%') {
                    b'%'
                } else {
                    return Ok(v);
                };
                let r = self.atom()?;
                v = match op {
                    b'*' => v * r,
                    _ if r == 0 => return Err("division by zero".to_owned()),
                    b'/' => v / r,
                    _ => v % r,
                };
            }
        }
        fn atom(&mut self) -> Result<i64, String> {
            self.skip();
            if self.eat(b'(') {
                let v = self.sum()?;
                return if self.eat(b')') {
                    Ok(v)
                } else {
                    Err("missing `)`".to_owned())
                };
            }
            if self.eat(b'-') {
                return Ok(-self.atom()?);
            }
            let rest = &self.s[self.at..];
            for (name, pick) in [("min", i64::min as fn(i64, i64) -> i64), ("max", i64::max)] {
                if rest.starts_with(name.as_bytes()) {
                    self.at += name.len();
                    if !self.eat(b'(') {
                        return Err(format!("`{name}` needs `(a, b)`"));
                    }
                    let a = self.sum()?;
                    if !self.eat(b',') {
                        return Err(format!("`{name}` needs `(a, b)`"));
                    }
                    let b = self.sum()?;
                    if !self.eat(b')') {
                        return Err("missing `)`".to_owned());
                    }
                    return Ok(pick(a, b));
                }
            }
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return Err("expected a number".to_owned());
            }
            let v = std::str::from_utf8(&rest[..digits])
                .ok()
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| "number too large".to_owned())?;
            self.at += digits;
            if self.s.get(self.at) == Some(&b'u') {
                self.at += 1;
            }
            Ok(v)
        }
    }
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let v = p.sum().map_err(|m| format!("`{}`: {m}", text.trim()))?;
    p.skip();
    if p.at != text.len() {
        return Err(format!("`{}`: unexpected `{}`", text.trim(), &text[p.at..]));
    }
    Ok(v)
}

/// Every embedded shader file as (path relative to `shaders/`, source), sorted by path.
pub fn embedded_files() -> &'static [(&'static str, &'static str)] {
    SHADER_FILES
}

/// The embedded source of `path` (relative to `shaders/`).
pub fn shader_source(path: &str) -> Option<&'static str> {
    SHADER_FILES
        .binary_search_by(|(p, _)| (*p).cmp(path))
        .ok()
        .map(|i| SHADER_FILES[i].1)
}

/// Every entry shader: embedded files not under `common/` (which holds imported pieces).
pub fn list_entry_shaders() -> Vec<&'static str> {
    SHADER_FILES
        .iter()
        .map(|(path, _)| *path)
        .filter(|path| !path.starts_with("common/"))
        .collect()
}

/// Composes an embedded shader to WGSL text.
pub fn compose(path: &str, defines: &Defines) -> Result<String, ShaderError> {
    Ok(ShaderLibrary::embedded().compose(path, defines)?.source)
}

/// Composes and naga-validates an embedded shader.
pub fn validate(path: &str, defines: &Defines) -> Result<naga::Module, ShaderError> {
    ShaderLibrary::embedded().validate(path, defines)
}

/// Composes, validates and creates an embedded shader's module on `ctx`'s device.
pub fn create_shader_module(
    ctx: &GpuContext,
    path: &str,
    defines: &Defines,
) -> Result<wgpu::ShaderModule, ShaderError> {
    ShaderLibrary::embedded().create_shader_module(ctx, path, defines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_files_are_sorted_and_found() {
        assert!(SHADER_FILES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(shader_source("common/math.wgsl").is_some_and(|s| s.contains("fn oct_encode")));
        assert!(
            !list_entry_shaders()
                .iter()
                .any(|p| p.starts_with("common/"))
        );
    }

    #[test]
    fn compiler_panics_become_errors() {
        assert_eq!(catch_compiler_panic(|| 7), Ok(7));
        let err = catch_compiler_panic(|| -> u32 { panic!("Expression [{}] is not cached!", 51) });
        assert_eq!(err, Err("Expression [51] is not cached!".to_owned()));
        assert_eq!(
            catch_compiler_panic(|| -> u32 { panic!("static") }),
            Err("static".to_owned())
        );
    }

    #[test]
    fn header_define_sets_are_a_product() {
        let header = ShaderHeader::parse(
            "// defines: TILE=8, KERNEL_F32\n// variants: KERNEL_F32 | KERNEL_F16, WIDE=1\n// variants: - | SG\nfn f() {}\n// variants: IGNORED\n",
        )
        .unwrap();
        let sets = header.define_sets();
        assert_eq!(sets.len(), 4);
        let has = |set: &Defines, n: &str, v: &str| set.get(n) == Some(v);
        assert!(has(&sets[0], "TILE", "8") && has(&sets[0], "KERNEL_F32", "1"));
        assert!(has(&sets[2], "KERNEL_F16", "1") && has(&sets[2], "WIDE", "1"));
        assert!(!sets[2].contains("KERNEL_F32"));
        assert!(has(&sets[2], "TILE", "8"));
        assert!(has(&sets[3], "SG", "1"));
        assert!(ShaderHeader::parse("// defines: 9x\n").is_err());
    }
}
