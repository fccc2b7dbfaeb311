//! DDS and KTX2: inputs in manifests and glTF (`MSFT_texture_dds`, `KHR_texture_basisu`),
//! `decompress --format dds|ktx2` read back by independent readers (`ddsfile`, `ktx2`,
//! `texture2ddecoder`), and `import --textures` on a generated folder.

use std::path::Path;

use neurotex::ntc::NtcConfig;
use neurotex::ntc::NtcPackage;
use neurotex::ntc::model::{GroupModel, LatentLayout, full_mip_count};
use neurotex::ntc::train::{Quality, TrainedGroup, TrainedMaterial};
use neurotex::scene::ImageSource;
use neurotex::texture::bcn::{BlockFormat, encode_rgba};
use neurotex::texture::containers::{BlockChain, full_chain, write_block_chain};
use neurotex::texture::{ChannelMask, LoadOptions, TextureSetDesc};

use crate::common::{expect_error, expect_ok, read_json, s, temp_dir};

/// A `size²` RGBA8 pattern: a gradient with a stripe, opaque.
fn pattern(size: u32) -> Vec<u8> {
    (0..size * size)
        .flat_map(|i| {
            let (x, y) = (i % size, i / size);
            let stripe = if (x / 4) % 2 == 0 { 40 } else { 0 };
            [
                (x * 200 / size) as u8 + stripe,
                (y * 255 / size) as u8,
                120,
                255,
            ]
        })
        .collect()
}

/// Write `format`'s full chain of [`pattern`] to `path` (`.dds` or `.ktx2`).
fn write_chain(path: &Path, format: BlockFormat, size: u32) {
    let levels = (0..full_chain(size, size))
        .map(|l| {
            let side = (size >> l).max(1);
            encode_rgba(&pattern(side), side, side, format)
        })
        .collect();
    let chain = BlockChain {
        format,
        srgb: format != BlockFormat::Bc5,
        width: size,
        height: size,
        levels,
    };
    write_block_chain(path, &chain).expect("write chain");
}

/// The test pattern as an RGBA8 image in the format `path`'s extension names.
fn write_image(path: &Path, size: u32) {
    image::save_buffer(
        path,
        &pattern(size),
        size,
        size,
        image::ExtendedColorType::Rgba8,
    )
    .expect("png");
}

#[test]
fn block_compressed_inputs_load_as_sets_and_say_they_were_lossy() {
    let dir = temp_dir("containers-inputs");
    write_chain(&dir.join("a_basecolor.dds"), BlockFormat::Bc1, 16);
    write_chain(&dir.join("a_normal.ktx2"), BlockFormat::Bc5, 16);
    let csv = "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const\n\
               a,T,T,a_basecolor.dds,a_normal.ktx2,0,0.5,0\n";
    let manifest = dir.join("m.csv");
    std::fs::write(&manifest, csv).expect("manifest");
    let stdout = expect_ok(&["import", "--manifest", s(&manifest)]);
    assert!(stdout.contains("16x16 mips 5"), "{stdout}");
    assert!(
        stdout.contains("a_basecolor.dds")
            && stdout.contains("BC1")
            && stdout.contains("already lossy"),
        "{stdout}"
    );
    assert!(stdout.contains("BC5"), "{stdout}");

    // The set's base colour is the BC1 decode of the pattern.
    let desc = TextureSetDesc {
        base_color: Some(ImageSource::File(dir.join("a_basecolor.dds"))),
        normal: None,
        metallic_roughness: None,
        occlusion: None,
        emissive: None,
        occlusion_from_arm: false,
    };
    let loaded = desc.load(&LoadOptions::default()).expect("load");
    assert_eq!(loaded.set.present, ChannelMask::BASE_COLOR);
    assert_eq!(loaded.lossy.len(), 1, "{:?}", loaded.lossy);
    let want = pattern(16);
    let err: f64 = loaded.set.mips[0]
        .texels
        .chunks_exact(12)
        .zip(want.chunks_exact(4))
        .map(|(t, p)| {
            (0..3)
                .map(|c| (t[c] as f64 - p[c] as f64).powi(2))
                .sum::<f64>()
        })
        .sum::<f64>()
        / (16.0 * 16.0 * 3.0);
    // The pattern's 40-step stripes cross BC1 blocks: about 29 dB is what BC1 keeps.
    assert!(err < 120.0, "BC1 mean squared error {err}");

    // A refused container fails the import with the file and the reason.
    let array = dir.join("b_basecolor.dds");
    let mut bytes = std::fs::read(dir.join("a_basecolor.dds")).expect("read");
    bytes[4 + 124 + 12..4 + 124 + 16].copy_from_slice(&2u32.to_le_bytes());
    std::fs::write(&array, bytes).expect("write");
    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const\n\
         b,T,T,b_basecolor.dds,,0,0.5,0\n",
    )
    .expect("manifest");
    expect_error(
        &["import", "--manifest", s(&bad)],
        &["b_basecolor.dds", "array"],
    );
}

#[test]
fn gltf_textures_pick_their_dds_ktx2_and_webp_sources() {
    let dir = temp_dir("containers-gltf");
    write_image(&dir.join("fallback.png"), 8);
    write_chain(&dir.join("tex.dds"), BlockFormat::Bc7, 8);
    write_chain(&dir.join("tex.ktx2"), BlockFormat::Bc7, 8);
    write_image(&dir.join("tex.webp"), 8);
    let gltf = crate::common::quad_scene(&dir, Some("fallback.png"));
    let mut json = read_json(&gltf);
    let images = json["images"].as_array_mut().expect("images");
    images.push(serde_json::json!({ "uri": "tex.dds" }));
    images.push(serde_json::json!({ "uri": "tex.ktx2" }));
    images.push(serde_json::json!({ "uri": "tex.webp" }));
    let (dds, ktx2, webp) = (images.len() - 3, images.len() - 2, images.len() - 1);
    let base_image = |path: &Path| {
        let scene = neurotex::scene::gltf_import::load(path).expect("import");
        let base = &scene.materials[0]
            .textures
            .base_color
            .as_ref()
            .expect("base")
            .image;
        let ImageSource::File(file) = base else {
            panic!("{base:?}")
        };
        file.file_name().and_then(|n| n.to_str()).map(str::to_owned)
    };
    for (ext, image, file) in [
        ("MSFT_texture_dds", dds, "tex.dds"),
        ("KHR_texture_basisu", ktx2, "tex.ktx2"),
        ("EXT_texture_webp", webp, "tex.webp"),
    ] {
        // With a core `source`, the texture reads that (the PNG fallback)…
        let mut doc = json.clone();
        doc["textures"][0]["extensions"] = serde_json::json!({ ext: { "source": image } });
        doc["extensionsUsed"] = serde_json::json!([ext]);
        let path = dir.join(format!("{ext}.gltf"));
        std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("write");
        assert_eq!(base_image(&path).as_deref(), Some("fallback.png"), "{ext}");
        // …without one (the extension required), the extension's image.
        doc["extensionsRequired"] = serde_json::json!([ext]);
        doc["textures"][0]
            .as_object_mut()
            .expect("texture")
            .remove("source");
        std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("write");
        assert_eq!(base_image(&path).as_deref(), Some(file), "{ext}");
        let stdout = expect_ok(&[
            "import",
            "--scene",
            s(&path),
            "--csv",
            s(&dir.join(format!("{ext}.csv"))),
        ]);
        assert!(stdout.contains("wrote"), "{stdout}");

        // An extension naming an image that does not exist is refused with its path.
        doc["textures"][0]["extensions"][ext]["source"] = serde_json::json!(99);
        std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("write");
        let e = neurotex::scene::gltf_import::load(&path).expect_err("bad source");
        assert!(
            e.to_string().contains(ext) && e.to_string().contains("99"),
            "{e}"
        );
    }
}

/// A package of one untrained 16² material with base colour and normal.
fn package(dir: &Path) -> std::path::PathBuf {
    let config = NtcConfig {
        features: 4,
        hidden: vec![8],
        ..Default::default()
    };
    let layout =
        LatentLayout::new(16, 16, full_mip_count(16, 16), config.preset, 4).expect("layout");
    let group = TrainedGroup {
        model: GroupModel::init(&config, vec![layout], 3).expect("model"),
        materials: vec![TrainedMaterial {
            name: "crate".into(),
            present: ChannelMask::BASE_COLOR | ChannelMask::NORMAL,
            quality: Quality::default(),
        }],
        losses: Vec::new(),
    };
    let mut package = NtcPackage::new(config).expect("package");
    package
        .add_group(&group, &[[1.0; neurotex::texture::CHANNELS]])
        .expect("group");
    let file = dir.join("crate.ntc");
    package.write(&file).expect("write");
    file
}

/// Decode every level of a DDS with `ddsfile` and `texture2ddecoder`: (levels, RGBA of
/// level 0).
fn read_dds(path: &Path) -> (u32, Vec<[u8; 4]>) {
    let dds = ddsfile::Dds::read(&std::fs::read(path).expect("read")[..]).expect("ddsfile");
    let (w, h) = (dds.get_width() as usize, dds.get_height() as usize);
    let data = dds.get_data(0).expect("data");
    let mut out = vec![0u32; w * h];
    match dds.get_dxgi_format().expect("dxgi") {
        ddsfile::DxgiFormat::BC7_UNorm_sRGB | ddsfile::DxgiFormat::BC7_UNorm => {
            texture2ddecoder::decode_bc7(data, w, h, &mut out)
        }
        ddsfile::DxgiFormat::BC1_UNorm_sRGB | ddsfile::DxgiFormat::BC1_UNorm => {
            texture2ddecoder::decode_bc1(data, w, h, &mut out)
        }
        ddsfile::DxgiFormat::BC5_UNorm => texture2ddecoder::decode_bc5(data, w, h, &mut out),
        other => panic!("{other:?}"),
    }
    .expect("decode");
    let rgba = out
        .iter()
        .map(|p| {
            let [b, g, r, a] = p.to_le_bytes();
            [r, g, b, a]
        })
        .collect();
    (dds.get_num_mipmap_levels(), rgba)
}

#[test]
fn decompress_writes_dds_and_ktx2_that_other_readers_open() {
    let dir = temp_dir("containers-out");
    let ntc = package(&dir);
    let png = dir.join("png");
    expect_ok(&["decompress", s(&ntc), "--out", s(&png)]);
    let reference = image::open(png.join("crate_base_color.png"))
        .expect("png")
        .to_rgba8();

    for (bc, base_format) in [("bc1", "BC1"), ("bc7", "BC7")] {
        let out = dir.join(bc);
        let stdout = expect_ok(&[
            "decompress",
            s(&ntc),
            "--out",
            s(&out),
            "--format",
            "dds",
            "--bc",
            bc,
        ]);
        assert!(stdout.contains("wrote 2"), "{stdout}");
        let (levels, rgba) = read_dds(&out.join("crate_base_color.dds"));
        assert_eq!(levels, 5, "{base_format}: a full chain");
        // Block compression of the decoded texels: near the PNG, not exact (an untrained
        // decoder's texels are noise-like, which BC1 keeps at about 22 dB; unrelated
        // images score below 12).
        let mse: f64 = rgba
            .iter()
            .zip(reference.pixels())
            .map(|(a, b)| {
                (0..3)
                    .map(|c| (a[c] as f64 - b.0[c] as f64).powi(2))
                    .sum::<f64>()
            })
            .sum::<f64>()
            / (rgba.len() as f64 * 3.0);
        let psnr = 10.0 * (255.0f64 * 255.0 / mse.max(1e-9)).log10();
        assert!(psnr > 16.0, "{base_format}: {psnr:.2} dB against the PNG");
        let (levels, _) = read_dds(&out.join("crate_normal.dds"));
        assert_eq!(levels, 5);

        let out = dir.join(format!("{bc}-ktx2"));
        expect_ok(&[
            "decompress",
            s(&ntc),
            "--out",
            s(&out),
            "--format",
            "ktx2",
            "--bc",
            bc,
        ]);
        let bytes = std::fs::read(out.join("crate_base_color.ktx2")).expect("read");
        let r = ktx2::Reader::new(&bytes[..]).expect("the ktx2 crate opens it");
        let want = if bc == "bc1" {
            ktx2::Format::BC1_RGB_SRGB_BLOCK
        } else {
            ktx2::Format::BC7_SRGB_BLOCK
        };
        assert_eq!(r.header().format, Some(want));
        assert_eq!(r.levels().len(), 5);
        assert_eq!(
            r.levels().next().map(|l| l.data.len()),
            Some(16 * if bc == "bc1" { 8 } else { 16 })
        );
        let bytes = std::fs::read(out.join("crate_normal.ktx2")).expect("read");
        let r = ktx2::Reader::new(&bytes[..]).expect("normal");
        assert_eq!(r.header().format, Some(ktx2::Format::BC5_UNORM_BLOCK));
    }
    expect_error(
        &[
            "decompress",
            s(&ntc),
            "--out",
            s(&dir.join("x")),
            "--format",
            "png",
            "--bc",
            "bc7",
        ],
        &["--bc"],
    );
}

#[test]
fn texture_folders_become_manifests() {
    let dir = temp_dir("containers-folder");
    for sub in ["wood", "metal", "misc"] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    write_image(&dir.join("wood/Oak_BaseColor.png"), 8);
    write_chain(&dir.join("wood/oak_NORMAL.dds"), BlockFormat::Bc5, 8);
    write_image(&dir.join("wood/Oak_ORM_1k.png"), 8);
    write_image(&dir.join("wood/Oak_Roughness.png"), 8);
    write_image(&dir.join("metal/Steel_albedo.tga"), 8);
    write_image(&dir.join("metal/Steel_Roughness.png"), 8);
    write_image(&dir.join("metal/Steel_Metallic.png"), 8);
    write_image(&dir.join("metal/Steel_Emissive.webp"), 8);
    write_image(&dir.join("misc/photo.png"), 8);
    write_image(&dir.join("misc/Lonely_AO.png"), 8);
    std::fs::write(dir.join("misc/notes.txt"), "not an image").expect("txt");

    let stdout = expect_ok(&["import", "--textures", s(&dir)]);
    let manifest = dir.join("manifest.csv");
    assert!(manifest.is_file(), "{stdout}");
    for (file, reason) in [
        ("Oak_Roughness.png", "ORM image already holds"),
        ("Steel_Metallic.png", "pack them into an _ORM"),
        ("photo.png", "no known texture suffix"),
        ("Lonely_AO.png", "neither a base colour nor a normal"),
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(file) && l.contains(reason)),
            "{file}: {stdout}"
        );
    }
    let entries = neurotex::texture::read_manifest(&manifest).expect("manifest reads");
    let names: Vec<&str> = entries.iter().map(|e| e.material.name.as_str()).collect();
    assert_eq!(names, ["metal/Steel", "wood/Oak"]);
    let steel = &entries[0].material;
    assert!(steel.textures.metallic_roughness.is_some() && steel.textures.emissive.is_some());
    assert_eq!(steel.metallic_factor, 0.0);
    let oak = &entries[1].material;
    assert!(oak.occlusion_from_arm && oak.textures.normal.is_some());
    // Every set decodes.
    expect_ok(&["import", "--manifest", s(&manifest)]);
    // Again: the manifest exists and is not replaced without --force.
    expect_error(
        &["import", "--textures", s(&dir)],
        &["manifest.csv", "--force"],
    );
}
