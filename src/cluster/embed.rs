//! Embeddings: one vector per texture set, tagged with the embedder that made it.
//!
//! [`embed_sets`] dispatches on [`EmbedderChoice`]: the weight-free `stats` embedder
//! (see the `stats` module) or CLIP (see the `clip` module; needs the `clip` cargo
//! feature and a local weights file). Every [`Embeddings`] records the embedder's name,
//! version and detail (for CLIP, the weights file), and its named blocks of dimensions,
//! so that every plan built from it can say which embedder made it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::clip::{self, ClipOptions};
use super::{ClusterError, stats};
use crate::texture::{CHANNELS, TextureSet};

/// The embedder to use, as picked on the command line (`--embedder stats|clip`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[derive(clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// Low-level texture statistics (colour moments, oriented filter energies, radial
    /// spectrum, normal-map statistics); no weights, no download.
    #[default]
    Stats,
    /// CLIP ViT-B/32 image features from a local safetensors file (cargo feature `clip`).
    Clip,
}

/// An embedder together with its settings.
#[derive(Clone, Debug, PartialEq)]
pub enum EmbedderChoice {
    /// The statistics embedder.
    Stats,
    /// CLIP image features.
    Clip(ClipOptions),
}

impl EmbedderChoice {
    /// The choice for `kind`; `clip_weights` is required for [`EmbedderKind::Clip`]
    /// (the ViT-B/32 architecture is assumed) and ignored for `stats`.
    pub fn new(kind: EmbedderKind, clip_weights: Option<&Path>) -> Result<Self, ClusterError> {
        match kind {
            EmbedderKind::Stats => Ok(EmbedderChoice::Stats),
            EmbedderKind::Clip => {
                let weights = clip_weights.ok_or(ClusterError::ClipWeightsMissing)?;
                Ok(EmbedderChoice::Clip(ClipOptions::vit_b32(weights)))
            }
        }
    }

    /// The embedder's name as recorded in embeddings and plans (`stats`, `clip-vit-b32`).
    pub fn name(&self) -> String {
        match self {
            EmbedderChoice::Stats => "stats".into(),
            EmbedderChoice::Clip(opts) => opts.embedder_name(),
        }
    }
}

/// A named, contiguous range of embedding dimensions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingBlock {
    /// The block's name (`oklab_moments`, `gabor_energy`, ...).
    pub name: String,
    /// First dimension of the block.
    pub start: usize,
    /// Number of dimensions.
    pub len: usize,
}

/// One embedding vector per texture set, in input order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Embeddings {
    /// The embedder's name (`stats`, `clip-vit-b32`, ...).
    pub embedder: String,
    /// The embedder's version; it changes whenever its vectors would.
    pub embedder_version: String,
    /// Settings that shaped the vectors (normalisation, weights file, ...).
    pub detail: String,
    /// The blocks the dimensions fall into, in order, covering `0..dim()`.
    pub blocks: Vec<EmbeddingBlock>,
    /// The texture sets' names, one per vector.
    pub set_names: Vec<String>,
    /// The vectors, all of the same length.
    pub vectors: Vec<Vec<f32>>,
}

impl Embeddings {
    /// Number of dimensions (0 when there are no vectors).
    pub fn dim(&self) -> usize {
        self.vectors.first().map_or(0, Vec::len)
    }

    /// Number of vectors (texture sets).
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// True when there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Check that there is one finite vector of the same length per set name.
    pub fn check(&self) -> Result<(), ClusterError> {
        if self.vectors.len() != self.set_names.len() {
            return Err(ClusterError::BadEmbedding {
                set: self.set_names.first().cloned().unwrap_or_default(),
                reason: format!(
                    "{} vectors for {} set names",
                    self.vectors.len(),
                    self.set_names.len()
                ),
            });
        }
        let dim = self.dim();
        for (name, v) in self.set_names.iter().zip(&self.vectors) {
            if v.len() != dim || dim == 0 {
                return Err(ClusterError::BadEmbedding {
                    set: name.clone(),
                    reason: format!("{} dimensions, expected {dim} (and at least 1)", v.len()),
                });
            }
            if let Some(d) = v.iter().position(|x| !x.is_finite()) {
                return Err(ClusterError::BadEmbedding {
                    set: name.clone(),
                    reason: format!("dimension {d} is {}", v[d]),
                });
            }
        }
        Ok(())
    }
}

/// Embed every texture set with `embedder`: one vector per set, in input order.
///
/// Fails on an empty input, on a malformed set (no mips, wrong texel count; the error
/// names the set), for `clip` without the `clip` feature or with a missing or bad weights
/// file (the error names the file and tensor).
pub fn embed_sets(
    sets: &[TextureSet],
    embedder: &EmbedderChoice,
) -> Result<Embeddings, ClusterError> {
    if sets.is_empty() {
        return Err(ClusterError::NoSets { what: "embed" });
    }
    for set in sets {
        check_set(set)?;
    }
    let set_names = sets.iter().map(|s| s.name.clone()).collect();
    let embeddings = match embedder {
        EmbedderChoice::Stats => {
            let vectors = stats::embed(sets);
            Embeddings {
                embedder: embedder.name(),
                embedder_version: stats::STATS_VERSION.to_string(),
                detail: stats::detail(),
                blocks: stats::blocks(),
                set_names,
                vectors,
            }
        }
        EmbedderChoice::Clip(opts) => {
            let vectors = clip::embed(sets, opts)?;
            let dim = vectors.first().map_or(0, Vec::len);
            Embeddings {
                embedder: embedder.name(),
                embedder_version: clip::CLIP_VERSION.to_string(),
                detail: opts.detail(),
                blocks: vec![EmbeddingBlock {
                    name: "clip_image_features".into(),
                    start: 0,
                    len: dim,
                }],
                set_names,
                vectors,
            }
        }
    };
    embeddings.check()?;
    Ok(embeddings)
}

/// Check that a set has a usable mip chain: at least one level, each of non-zero size
/// with exactly `width × height × CHANNELS` bytes.
pub(super) fn check_set(set: &TextureSet) -> Result<(), ClusterError> {
    let bad = |reason: String| ClusterError::BadSet {
        set: set.name.clone(),
        reason,
    };
    if set.mips.is_empty() {
        return Err(bad("it has no mip levels".into()));
    }
    for (level, mip) in set.mips.iter().enumerate() {
        let expected = (mip.width as usize)
            .checked_mul(mip.height as usize)
            .and_then(|n| n.checked_mul(CHANNELS));
        if mip.width == 0 || mip.height == 0 || expected != Some(mip.texels.len()) {
            return Err(bad(format!(
                "mip {level} is {}×{} but holds {} bytes (expected {} channels per texel)",
                mip.width,
                mip.height,
                mip.texels.len(),
                CHANNELS
            )));
        }
    }
    Ok(())
}
