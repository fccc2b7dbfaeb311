//! The `clip` embedder: CLIP ViT image features, as the paper uses (ViT-B/32, 512 dims).
//!
//! Weights come from a user-supplied local safetensors file in the Hugging Face layout
//! (`openai/clip-vit-base-patch32`'s `model.safetensors`: `vision_model.*` and
//! `visual_projection.weight`; text tensors may be present and are ignored). No package
//! registry ships them and nothing is downloaded. Every tensor the vision tower needs is
//! checked for presence, shape and a floating-point type before the model is built
//! ([`ClipArch::expected_tensors`]); a missing or mis-shaped tensor is an error naming the
//! tensor and the file — the model never falls back to random weights.
//!
//! Preprocessing ([`clip_pixels`], always available) follows OpenAI's `_transform`: the
//! base colour (sRGB bytes, alpha dropped) of the smallest mip whose shorter side is at
//! least the model's input size (else mip 0) is resized so that the shorter side equals
//! the input size (bicubic, a = −0.5, antialiased when shrinking, as Pillow does; the
//! longer side is `⌊size · long / short⌋`, as torchvision computes it), centre-cropped
//! (offsets rounded half to even, as Python does), scaled to \[0, 1\] and normalised with
//! [`CLIP_MEAN`] / [`CLIP_STD`]. Unlike Pillow the two resampling passes keep f32
//! precision (clamped to \[0, 255\] after each pass) instead of rounding to bytes.
//!
//! The model (cargo feature `clip`) is candle-transformers' `ClipVisionTransformer` plus
//! the `visual_projection`; image features are L2-normalised, so k-means on them works
//! with cosine geometry, as is usual for CLIP.

use std::path::{Path, PathBuf};

use super::ClusterError;
use super::embed::check_set;
use crate::texture::{CHANNELS, TextureSet};

/// Version of the `clip` embedder's preprocessing and output; bumped when they change.
pub(super) const CLIP_VERSION: &str = "1";

/// OpenAI CLIP's per-channel normalisation mean (RGB, on values in \[0, 1\]).
pub const CLIP_MEAN: [f32; 3] = [0.481_454_66, 0.457_827_5, 0.408_210_73];

/// OpenAI CLIP's per-channel normalisation standard deviation (RGB; 0.26862954,
/// 0.26130258, 0.27577711 rounded to f32).
pub const CLIP_STD: [f32; 3] = [0.268_629_54, 0.261_302_6, 0.275_777_1];

/// The shape of a CLIP vision tower (the fields of candle-transformers'
/// `ClipVisionConfig`, activation fixed to QuickGELU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClipArch {
    /// Transformer width.
    pub embed_dim: usize,
    /// MLP hidden width.
    pub intermediate_size: usize,
    /// Number of transformer layers.
    pub num_hidden_layers: usize,
    /// Number of attention heads (must divide `embed_dim`).
    pub num_attention_heads: usize,
    /// Output (projection) dimensions.
    pub projection_dim: usize,
    /// Input image side in pixels.
    pub image_size: usize,
    /// Patch side in pixels (must divide `image_size`).
    pub patch_size: usize,
}

impl ClipArch {
    /// CLIP ViT-B/32: width 768, 12 layers, 12 heads, MLP 3072, 224² input, 32² patches,
    /// 512 output dimensions.
    pub const fn vit_b32() -> ClipArch {
        ClipArch {
            embed_dim: 768,
            intermediate_size: 3072,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            projection_dim: 512,
            image_size: 224,
            patch_size: 32,
        }
    }

    /// Check that the sizes are non-zero and fit together.
    pub fn check(&self) -> Result<(), String> {
        let a = self;
        if [
            a.embed_dim,
            a.intermediate_size,
            a.num_hidden_layers,
            a.num_attention_heads,
            a.projection_dim,
            a.image_size,
            a.patch_size,
        ]
        .contains(&0)
        {
            return Err(format!("architecture {a:?} has a zero size"));
        }
        if !a.embed_dim.is_multiple_of(a.num_attention_heads) {
            return Err(format!(
                "{} attention heads do not divide the width {}",
                a.num_attention_heads, a.embed_dim
            ));
        }
        if !a.image_size.is_multiple_of(a.patch_size) || a.image_size > 4096 {
            return Err(format!(
                "patch size {} does not divide the image size {} (at most 4096)",
                a.patch_size, a.image_size
            ));
        }
        Ok(())
    }

    /// Every tensor the vision tower and projection read, with its shape, in the Hugging
    /// Face CLIP layout.
    pub fn expected_tensors(&self) -> Vec<(String, Vec<usize>)> {
        let (d, i) = (self.embed_dim, self.intermediate_size);
        let positions = (self.image_size / self.patch_size.max(1)).pow(2) + 1;
        let v = |name: &str| format!("vision_model.{name}");
        let mut t = vec![
            (v("embeddings.class_embedding"), vec![d]),
            (
                v("embeddings.patch_embedding.weight"),
                vec![d, 3, self.patch_size, self.patch_size],
            ),
            (
                v("embeddings.position_embedding.weight"),
                vec![positions, d],
            ),
            (v("pre_layrnorm.weight"), vec![d]),
            (v("pre_layrnorm.bias"), vec![d]),
        ];
        for l in 0..self.num_hidden_layers {
            let p = |name: &str| v(&format!("encoder.layers.{l}.{name}"));
            for proj in ["q_proj", "k_proj", "v_proj", "out_proj"] {
                t.push((p(&format!("self_attn.{proj}.weight")), vec![d, d]));
                t.push((p(&format!("self_attn.{proj}.bias")), vec![d]));
            }
            for norm in ["layer_norm1", "layer_norm2"] {
                t.push((p(&format!("{norm}.weight")), vec![d]));
                t.push((p(&format!("{norm}.bias")), vec![d]));
            }
            t.push((p("mlp.fc1.weight"), vec![i, d]));
            t.push((p("mlp.fc1.bias"), vec![i]));
            t.push((p("mlp.fc2.weight"), vec![d, i]));
            t.push((p("mlp.fc2.bias"), vec![d]));
        }
        t.push((v("post_layernorm.weight"), vec![d]));
        t.push((v("post_layernorm.bias"), vec![d]));
        t.push((
            "visual_projection.weight".into(),
            vec![self.projection_dim, d],
        ));
        t
    }
}

/// Settings of the `clip` embedder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClipOptions {
    /// The local safetensors file with the weights.
    pub weights: PathBuf,
    /// The architecture the weights must have.
    pub arch: ClipArch,
}

impl ClipOptions {
    /// ViT-B/32 weights from `weights`.
    pub fn vit_b32(weights: &Path) -> ClipOptions {
        ClipOptions {
            weights: weights.to_path_buf(),
            arch: ClipArch::vit_b32(),
        }
    }

    /// `clip-vit-b32` for ViT-B/32, otherwise a name spelling out the architecture.
    pub fn embedder_name(&self) -> String {
        let a = &self.arch;
        if *a == ClipArch::vit_b32() {
            "clip-vit-b32".into()
        } else {
            format!(
                "clip-vit-w{}-l{}-h{}-p{}-s{}-d{}",
                a.embed_dim,
                a.num_hidden_layers,
                a.num_attention_heads,
                a.patch_size,
                a.image_size,
                a.projection_dim
            )
        }
    }

    /// The settings recorded with CLIP embeddings.
    pub(super) fn detail(&self) -> String {
        format!(
            "weights {}; bicubic shorter side → {s}, centre crop {s}², OpenAI mean/std; \
             L2-normalised image features",
            self.weights.display(),
            s = self.arch.image_size
        )
    }
}

/// CLIP input for `set`: `3 × size × size` floats (CHW, RGB), preprocessed as described
/// in the module docs.
pub fn clip_pixels(set: &TextureSet, size: usize) -> Result<Vec<f32>, ClusterError> {
    check_set(set)?;
    if size == 0 || size > 4096 {
        return Err(ClusterError::BadSet {
            set: set.name.clone(),
            reason: format!("CLIP input size {size} is outside 1..=4096"),
        });
    }
    let mip = set
        .mips
        .iter()
        .rev()
        .find(|m| m.width.min(m.height) as usize >= size)
        .unwrap_or(&set.mips[0]);
    let (w, h) = (mip.width as usize, mip.height as usize);
    let (nw, nh) = if w <= h {
        (size, (size * h / w).max(size))
    } else {
        ((size * w / h).max(size), size)
    };
    let rgb: Vec<[f32; 3]> = mip
        .texels
        .chunks_exact(CHANNELS)
        .map(|t| [t[0] as f32, t[1] as f32, t[2] as f32])
        .collect();
    // Horizontal pass w → nw, then vertical h → nh.
    let tx = cubic_taps(w, nw);
    let mut tmp = vec![[0f32; 3]; nw * h];
    for y in 0..h {
        for (x, (start, weights)) in tx.iter().enumerate() {
            tmp[y * nw + x] = apply_taps(weights, |k| rgb[y * w + start + k]);
        }
    }
    let ty = cubic_taps(h, nh);
    let top = crop_offset(nh, size);
    let left = crop_offset(nw, size);
    let plane = size * size;
    let mut out = vec![0f32; 3 * plane];
    for y in 0..size {
        let (start, weights) = &ty[top + y];
        for x in 0..size {
            let p = apply_taps(weights, |k| tmp[(start + k) * nw + left + x]);
            for c in 0..3 {
                out[c * plane + y * size + x] = (p[c] / 255.0 - CLIP_MEAN[c]) / CLIP_STD[c];
            }
        }
    }
    Ok(out)
}

/// Python's `int(round((len - size) / 2))` (round half to even).
fn crop_offset(len: usize, size: usize) -> usize {
    ((len.saturating_sub(size)) as f64 / 2.0).round_ties_even() as usize
}

/// Σ wₖ·pixel(k), clamped to \[0, 255\].
fn apply_taps(weights: &[f32], pixel: impl Fn(usize) -> [f32; 3]) -> [f32; 3] {
    let mut acc = [0f32; 3];
    for (k, &wk) in weights.iter().enumerate() {
        let p = pixel(k);
        for c in 0..3 {
            acc[c] += wk * p[c];
        }
    }
    acc.map(|v| v.clamp(0.0, 255.0))
}

/// Pillow's bicubic kernel (a = −0.5).
fn bicubic(x: f64) -> f64 {
    const A: f64 = -0.5;
    let x = x.abs();
    if x < 1.0 {
        ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        (((x - 5.0) * x + 8.0) * x - 4.0) * A
    } else {
        0.0
    }
}

/// Pillow's `precompute_coeffs` for bicubic: per output sample, the first input index
/// and the normalised weights (support widened by the scale when shrinking).
fn cubic_taps(in_len: usize, out_len: usize) -> Vec<(usize, Vec<f32>)> {
    let scale = in_len as f64 / out_len as f64;
    let filter_scale = scale.max(1.0);
    let support = 2.0 * filter_scale;
    (0..out_len)
        .map(|i| {
            let center = (i as f64 + 0.5) * scale;
            let lo = ((center - support + 0.5).floor().max(0.0) as usize).min(in_len - 1);
            let hi = ((center + support + 0.5).floor() as usize).clamp(lo + 1, in_len);
            let mut w: Vec<f64> = (lo..hi)
                .map(|x| bicubic((x as f64 - center + 0.5) / filter_scale))
                .collect();
            let total: f64 = w.iter().sum();
            if total.abs() > 1e-12 {
                for v in &mut w {
                    *v /= total;
                }
            } else {
                w = vec![0.0; hi - lo];
                w[0] = 1.0;
            }
            (lo, w.into_iter().map(|v| v as f32).collect())
        })
        .collect()
}

/// CLIP features of `sets` (one L2-normalised vector of `projection_dim` per set).
#[cfg(feature = "clip")]
pub(super) fn embed(
    sets: &[TextureSet],
    opts: &ClipOptions,
) -> Result<Vec<Vec<f32>>, ClusterError> {
    model::embed(sets, opts)
}

/// Without the `clip` feature there is no model: always an error naming the weights.
#[cfg(not(feature = "clip"))]
pub(super) fn embed(
    _sets: &[TextureSet],
    opts: &ClipOptions,
) -> Result<Vec<Vec<f32>>, ClusterError> {
    Err(ClusterError::ClipDisabled {
        weights: opts.weights.clone(),
    })
}

/// The candle model: weight loading with validation, and the forward pass.
#[cfg(feature = "clip")]
mod model {
    use std::collections::HashMap;

    use candle_core::{DType, Device, Tensor};
    use candle_nn::{Module, VarBuilder};
    use candle_transformers::models::clip::text_model::Activation;
    use candle_transformers::models::clip::vision_model::{
        ClipVisionConfig, ClipVisionTransformer,
    };

    use super::{ClipOptions, ClusterError, TextureSet, clip_pixels};

    /// Sets per forward pass.
    const BATCH: usize = 8;

    /// Load `opts.weights`, check every expected tensor, run the vision tower and the
    /// projection, L2-normalise.
    pub(super) fn embed(
        sets: &[TextureSet],
        opts: &ClipOptions,
    ) -> Result<Vec<Vec<f32>>, ClusterError> {
        let file = opts.weights.clone();
        let clip_err = |e: candle_core::Error| ClusterError::Clip {
            file: file.clone(),
            message: e.to_string(),
        };
        let arch = opts.arch;
        arch.check().map_err(|message| ClusterError::Clip {
            file: file.clone(),
            message,
        })?;
        let tensors = load_checked(opts)?;
        let device = Device::Cpu;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let config = ClipVisionConfig {
            embed_dim: arch.embed_dim,
            activation: Activation::QuickGelu,
            intermediate_size: arch.intermediate_size,
            num_hidden_layers: arch.num_hidden_layers,
            num_attention_heads: arch.num_attention_heads,
            projection_dim: arch.projection_dim,
            num_channels: 3,
            image_size: arch.image_size,
            patch_size: arch.patch_size,
        };
        let vision =
            ClipVisionTransformer::new(vb.pp("vision_model"), &config).map_err(clip_err)?;
        let projection = candle_nn::linear_no_bias(
            arch.embed_dim,
            arch.projection_dim,
            vb.pp("visual_projection"),
        )
        .map_err(clip_err)?;
        let s = arch.image_size;
        let mut out = Vec::with_capacity(sets.len());
        for chunk in sets.chunks(BATCH) {
            let mut pixels = Vec::with_capacity(chunk.len() * 3 * s * s);
            for set in chunk {
                pixels.extend(clip_pixels(set, s)?);
            }
            let x = Tensor::from_vec(pixels, (chunk.len(), 3, s, s), &device).map_err(clip_err)?;
            let features = vision
                .forward(&x)
                .and_then(|f| projection.forward(&f))
                .and_then(|f| f.to_vec2::<f32>())
                .map_err(clip_err)?;
            for mut f in features {
                let norm = f.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                for v in &mut f {
                    *v /= norm;
                }
                out.push(f);
            }
        }
        Ok(out)
    }

    /// Read the safetensors file and check presence, shape and type of every tensor the
    /// model reads; return them by name.
    fn load_checked(opts: &ClipOptions) -> Result<HashMap<String, Tensor>, ClusterError> {
        let file = &opts.weights;
        std::fs::metadata(file).map_err(|source| ClusterError::Io {
            path: file.clone(),
            source,
        })?;
        let tensors =
            candle_core::safetensors::load(file, &Device::Cpu).map_err(|e| ClusterError::Clip {
                file: file.clone(),
                message: format!("not a readable safetensors file: {e}"),
            })?;
        let problem = |tensor: &str, problem: String| ClusterError::ClipTensor {
            file: file.clone(),
            tensor: tensor.to_string(),
            problem,
        };
        for (name, shape) in opts.arch.expected_tensors() {
            let t = tensors
                .get(&name)
                .ok_or_else(|| problem(&name, "missing".into()))?;
            if t.dims() != shape.as_slice() {
                return Err(problem(
                    &name,
                    format!("shape {:?}, expected {shape:?}", t.dims()),
                ));
            }
            if !matches!(
                t.dtype(),
                DType::F16 | DType::BF16 | DType::F32 | DType::F64
            ) {
                return Err(problem(
                    &name,
                    format!("type {:?} is not floating point", t.dtype()),
                ));
            }
        }
        Ok(tensors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texture::SetMip;

    /// A one-mip set of `w × h` whose base colour is `f(x, y)`.
    fn set(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 3]) -> TextureSet {
        let mut texels = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let [r, g, b] = f(x, y);
                texels.extend([r, g, b, 255, 128, 128, 255, 255, 255, 255, 255, 255]);
            }
        }
        TextureSet {
            name: "t".into(),
            width: w,
            height: h,
            present: crate::texture::ChannelMask::BASE_COLOR,
            mips: vec![SetMip {
                width: w,
                height: h,
                texels,
            }],
        }
    }

    #[test]
    fn uniform_colour_normalises_exactly() {
        let px = clip_pixels(&set(50, 40, |_, _| [200, 100, 50]), 16).expect("pixels");
        assert_eq!(px.len(), 3 * 16 * 16);
        for (c, v) in [200.0f32, 100.0, 50.0].iter().enumerate() {
            let expected = (v / 255.0 - CLIP_MEAN[c]) / CLIP_STD[c];
            assert!(
                px[c * 256..(c + 1) * 256]
                    .iter()
                    .all(|p| (p - expected).abs() < 1e-4)
            );
        }
    }

    #[test]
    fn resize_then_centre_crop() {
        // 64×32: left half black, right half white → resized to 32×16, crop 16×16 at
        // x = 8: columns 0..8 dark, 8..16 bright.
        let s = set(64, 32, |x, _| if x < 32 { [0; 3] } else { [255; 3] });
        let px = clip_pixels(&s, 16).expect("pixels");
        let at = |x: usize, y: usize| px[y * 16 + x] * CLIP_STD[0] + CLIP_MEAN[0];
        assert!(at(0, 8) < 0.01, "{}", at(0, 8));
        assert!(at(15, 8) > 0.99, "{}", at(15, 8));
        assert!((at(7, 8) + at(8, 8) - 1.0).abs() < 0.05);
    }

    #[test]
    fn taps_are_normalised_and_identity_at_scale_one() {
        for (n, m) in [(10, 10), (100, 7), (7, 100), (1, 4), (4, 1)] {
            for (lo, w) in cubic_taps(n, m) {
                assert!(lo + w.len() <= n);
                assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            }
        }
        for (i, (lo, w)) in cubic_taps(5, 5).into_iter().enumerate() {
            let one = lo + w.iter().position(|&x| (x - 1.0).abs() < 1e-6).expect("tap");
            assert_eq!(one, i);
        }
    }

    #[test]
    fn vit_b32_tensor_list() {
        let t = ClipArch::vit_b32().expected_tensors();
        assert_eq!(t.len(), 5 + 12 * 16 + 3);
        assert!(t.contains(&(
            "vision_model.embeddings.position_embedding.weight".into(),
            vec![50, 768]
        )));
        assert!(t.contains(&("visual_projection.weight".into(), vec![512, 768])));
    }

    #[cfg(not(feature = "clip"))]
    #[test]
    fn clip_without_feature_is_an_error() {
        let opts = ClipOptions::vit_b32(Path::new("weights.safetensors"));
        let err = embed(&[set(4, 4, |_, _| [0; 3])], &opts).unwrap_err();
        assert!(err.to_string().contains("--features clip"), "{err}");
        assert!(err.to_string().contains("weights.safetensors"), "{err}");
    }

    /// A tiny random CLIP checkpoint, written with candle's safetensors writer.
    #[cfg(feature = "clip")]
    fn tiny_checkpoint(
        dir: &Path,
        arch: &ClipArch,
        skip: Option<&str>,
        bad_shape: Option<&str>,
    ) -> PathBuf {
        use candle_core::{Device, Tensor};
        let mut map = std::collections::HashMap::new();
        for (name, mut shape) in arch.expected_tensors() {
            if Some(name.as_str()) == skip {
                continue;
            }
            if Some(name.as_str()) == bad_shape {
                shape[0] += 1;
            }
            let t = Tensor::randn(0f32, 0.2, shape, &Device::Cpu).expect("randn");
            map.insert(name, t);
        }
        // Unrelated tensors (a text tower) are ignored.
        map.insert(
            "text_model.final_layer_norm.weight".into(),
            Tensor::ones(3, candle_core::DType::F32, &Device::Cpu).expect("ones"),
        );
        std::fs::create_dir_all(dir).expect("dir");
        let path = dir.join(format!(
            "tiny_{}_{}.safetensors",
            skip.is_some(),
            bad_shape.is_some()
        ));
        candle_core::safetensors::save(&map, &path).expect("save");
        path
    }

    #[cfg(feature = "clip")]
    #[test]
    fn tiny_random_checkpoint_embeds_and_bad_files_fail() {
        let arch = ClipArch {
            embed_dim: 16,
            intermediate_size: 32,
            num_hidden_layers: 2,
            num_attention_heads: 2,
            projection_dim: 8,
            image_size: 32,
            patch_size: 8,
        };
        let dir = std::env::temp_dir().join(format!("neurotex_clip_{}", std::process::id()));
        let good = tiny_checkpoint(&dir, &arch, None, None);
        let opts = ClipOptions {
            weights: good.clone(),
            arch,
        };
        let sets: Vec<TextureSet> = (0..3u8)
            .map(|i| set(40, 48, move |x, y| [(x * 5) as u8, (y * 4) as u8, i * 80]))
            .collect();
        let a = embed(&sets, &opts).expect("embed");
        let b = embed(&sets, &opts).expect("embed again");
        assert_eq!(a, b, "deterministic for fixed weights");
        assert_eq!(a.len(), 3);
        for v in &a {
            assert_eq!(v.len(), 8);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4);
        }
        assert_ne!(a[0], a[2]);
        assert_eq!(opts.embedder_name(), "clip-vit-w16-l2-h2-p8-s32-d8");

        // A damaged checkpoint: the error names the file and the tensor.
        let damaged = |missing: Option<&str>, wrong: Option<&str>| {
            let weights = tiny_checkpoint(&dir, &arch, missing, wrong);
            let msg = embed(
                &sets,
                &ClipOptions {
                    weights: weights.clone(),
                    arch,
                },
            )
            .unwrap_err()
            .to_string();
            assert!(msg.contains(&weights.display().to_string()), "{msg}");
            msg
        };
        let missing = "vision_model.encoder.layers.1.mlp.fc2.bias";
        let msg = damaged(Some(missing), None);
        assert!(msg.contains(missing) && msg.contains("missing"), "{msg}");
        let wrong = "vision_model.embeddings.class_embedding";
        let msg = damaged(None, Some(wrong));
        assert!(msg.contains(wrong) && msg.contains("shape"), "{msg}");

        // The real architecture does not match the tiny file.
        let err = embed(&sets, &ClipOptions::vit_b32(&good)).unwrap_err();
        assert!(
            err.to_string().contains(&good.display().to_string()),
            "{err}"
        );

        let err = embed(
            &sets,
            &ClipOptions::vit_b32(&dir.join("nowhere.safetensors")),
        )
        .unwrap_err();
        assert!(err.to_string().contains("nowhere.safetensors"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
