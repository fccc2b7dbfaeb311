//! Round trips, and every malformed package an error naming what is wrong.

use super::write::put_u32;
use super::*;
use crate::ntc::model::SplitMix64;
use crate::ntc::train::{TrainConfig, TrainedMaterial, train_cpu};
use crate::texture::TextureSet;

fn small_config() -> NtcConfig {
    NtcConfig {
        features: 4,
        hidden: vec![8],
        activation: Activation::LeakyRelu,
        preset: Preset::Medium,
        ..NtcConfig::default()
    }
}

/// A group of untrained materials of the given sizes.
fn group(config: &NtcConfig, sizes: &[(&str, u32, u32)], seed: u64) -> TrainedGroup {
    let layouts = sizes
        .iter()
        .map(|&(_, w, h)| {
            let mips = crate::ntc::model::full_mip_count(w, h);
            LatentLayout::new(w, h, mips, config.preset, config.features).expect("layout")
        })
        .collect();
    let model = GroupModel::init(config, layouts, seed).expect("model");
    let mut quality = Quality::default();
    quality.psnr[0] = Some(31.5);
    quality.psnr[2] = Some(f32::INFINITY);
    TrainedGroup {
        model,
        materials: sizes
            .iter()
            .map(|&(name, _, _)| TrainedMaterial {
                name: name.into(),
                present: ChannelMask::BASE_COLOR | ChannelMask::NORMAL,
                quality,
            })
            .collect(),
        losses: Vec::new(),
    }
}

/// Two decoders, three materials (one non-square, one with a non-ASCII name).
fn small_package() -> NtcPackage {
    let config = small_config();
    let mut package = NtcPackage::new(config.clone()).expect("package");
    let a = group(&config, &[("brick", 16, 16), ("Ziegel·Wand", 16, 4)], 1);
    let b = group(&config, &[("wood", 8, 8)], 2);
    let constants = |k: f32| std::array::from_fn(|c| k + c as f32 * 0.125);
    assert_eq!(
        package
            .add_group(&a, &[constants(1.0), constants(0.5)])
            .expect("a"),
        0
    );
    assert_eq!(package.add_group(&b, &[constants(0.25)]).expect("b"), 1);
    package
}

/// Assemble a file from header fields and section payloads with valid checksums.
/// The sections of `package` (3 materials, 2 decoders) written as a file, past the
/// writer's checks.
fn sections_of(package: &NtcPackage) -> Vec<u8> {
    assemble(
        3,
        2,
        [
            &package.config_bytes(),
            &package.material_bytes(),
            &package.decoder_bytes(),
            &package.latent_bytes(),
        ],
    )
}

fn assemble(materials: u32, decoders: u32, payloads: [&[u8]; 4]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for v in [VERSION, materials, decoders, 4, 0] {
        put_u32(&mut out, v);
    }
    for p in payloads {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
    }
    let crc = crc32fast::hash(&out);
    put_u32(&mut out, crc);
    for (s, p) in Section::ALL.iter().zip(payloads) {
        out.extend_from_slice(&s.tag());
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        put_u32(&mut out, crc32fast::hash(p));
        out.extend_from_slice(p);
    }
    out
}

/// Offset of a section's payload in `bytes` of `package`.
fn payload_offset(package: &NtcPackage, section: Section) -> usize {
    let lens = [
        package.config_bytes().len(),
        package.material_bytes().len(),
        package.decoder_bytes().len(),
        package.latent_bytes().len(),
    ];
    let index = Section::ALL
        .iter()
        .position(|&s| s == section)
        .expect("section");
    HEADER_LEN
        + lens[..index]
            .iter()
            .map(|l| l + SECTION_HEADER_LEN)
            .sum::<usize>()
        + SECTION_HEADER_LEN
}

#[test]
fn round_trip_through_bytes_and_files() {
    let package = small_package();
    let bytes = package.to_bytes().expect("bytes");
    let back = NtcPackage::from_bytes(&bytes).expect("parse");
    assert_eq!(back, package);
    assert_eq!(back.materials[1].name, "Ziegel·Wand");
    assert_eq!(back.materials[2].decoder, 1);
    assert_eq!(back.materials[0].quality.psnr[2], Some(f32::INFINITY));
    assert_eq!(back.materials[0].quality.psnr[1], None);
    assert_eq!(
        back.materials[1].layout.grids()[0],
        GridShape {
            width: 2,
            height: 1
        }
    );

    let dir = crate::io::test_dir("ntc");
    let path = dir.join("scene.ntc");
    package.write(&path).expect("write");
    let read = NtcPackage::read(&path).expect("read");
    assert_eq!(read.source(), Some(path.as_path()));
    assert_eq!(read, package);
    assert_eq!(read.to_bytes().expect("bytes"), bytes);
    // Never over the input, also when spelled differently.
    let err = read
        .write(&dir.join(".").join("scene.ntc"))
        .expect_err("overwrite");
    assert!(
        matches!(err, NtcFormatError::OverwritesInput { .. }),
        "{err}"
    );
    read.write(&dir.join("copy.ntc")).expect("write elsewhere");
    assert_eq!(std::fs::read(dir.join("copy.ntc")).expect("copy"), bytes);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("list")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    let missing = NtcPackage::read(&dir.join("missing.ntc")).expect_err("missing");
    assert!(missing.to_string().contains("missing.ntc"), "{missing}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn groups_may_have_their_own_preset() {
    // Rate control gives each group its own latent resolution; the header names the
    // requested preset (Medium here).
    let mut package = small_package();
    let high = NtcConfig {
        preset: Preset::High,
        ..small_config()
    };
    package
        .add_group(&group(&high, &[("tile", 16, 16)], 3), &[[1.0; CHANNELS]])
        .expect("a group at another preset");
    assert_ne!(package.materials[3].layout, package.materials[0].layout);
    let back = NtcPackage::from_bytes(&package.to_bytes().expect("bytes")).expect("parse");
    assert_eq!(back, package);
}

#[test]
fn trained_group_decodes_identically_after_packaging() {
    let set = TextureSet::from_fn("ramp", ChannelMask::BASE_COLOR, (8, 8), |x, y| {
        let v = ((y * 8 + x) * 4) as u8;
        [v, 255 - v, 128, 255, 128, 128, 255, 255, 255, 255, 255, 255]
    });
    let config = TrainConfig {
        model: small_config(),
        batch_size: 16,
        ..TrainConfig::default()
    };
    let trained = train_cpu(&[set], &config, 10, 5).expect("train");
    let mut package = NtcPackage::new(config.model.clone()).expect("package");
    package
        .add_group(&trained, &[[1.0; CHANNELS]])
        .expect("add");
    let back = NtcPackage::from_bytes(&package.to_bytes().expect("bytes")).expect("parse");
    let (model, materials) = back.group_model(0).expect("model");
    assert_eq!(materials, [0]);
    assert_eq!(model, trained.model);
    assert_eq!(back.materials[0].quality, trained.materials[0].quality);
    assert!(back.group_model(1).is_err());
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = small_package().to_bytes().expect("bytes");
    for n in 0..bytes.len() {
        let err = NtcPackage::from_bytes(&bytes[..n]).expect_err("truncated");
        assert!(
            matches!(err, NtcFormatError::Truncated { .. }),
            "length {n}: {err}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        NtcPackage::from_bytes(&longer),
        Err(NtcFormatError::TrailingBytes { count: 1 })
    ));
}

#[test]
fn flipped_bytes_are_caught() {
    let package = small_package();
    let bytes = package.to_bytes().expect("bytes");
    // Every single flipped byte anywhere is an error.
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x40;
        assert!(NtcPackage::from_bytes(&bad).is_err(), "byte {i}");
    }
    // In a payload it is that section's checksum.
    for section in Section::ALL {
        let mut bad = bytes.clone();
        bad[payload_offset(&package, section)] ^= 1;
        let err = NtcPackage::from_bytes(&bad).expect_err("flipped");
        assert_eq!(
            err.to_string().split(" (").next(),
            Some(format!("section `{}` checksum mismatch", section.name()).as_str())
        );
    }
    let mut bad = bytes.clone();
    bad[9] ^= 1; // material count
    let err = NtcPackage::from_bytes(&bad).expect_err("header");
    assert!(
        err.to_string().starts_with("header checksum mismatch"),
        "{err}"
    );
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert!(matches!(
        NtcPackage::from_bytes(&bad),
        Err(NtcFormatError::BadMagic { .. })
    ));
    // A shard's part file is named as one, with the command that joins parts.
    let mut part = bytes.clone();
    part[..8].copy_from_slice(&crate::ntc::shard::PART_MAGIC);
    let err = NtcPackage::from_bytes(&part).expect_err("part");
    assert!(err.to_string().contains("neurotex merge"), "{err}");
    let mut bad = bytes;
    bad[HEADER_LEN] = b'X'; // the config section's tag
    let err = NtcPackage::from_bytes(&bad).expect_err("tag");
    assert!(
        matches!(
            err,
            NtcFormatError::SectionTag {
                expected: Section::Config,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn wrong_version_is_named() {
    let mut bytes = small_package().to_bytes().expect("bytes");
    bytes[4..8].copy_from_slice(&2u32.to_le_bytes());
    let err = NtcPackage::from_bytes(&bytes).expect_err("version");
    assert!(matches!(
        err,
        NtcFormatError::UnsupportedVersion { found: 2 }
    ));
    assert_eq!(
        err.to_string(),
        "unsupported .ntc version 2 (this build reads version 1)"
    );
}

#[test]
fn absurd_counts_and_sizes_do_not_allocate() {
    let package = small_package();
    let config = package.config_bytes();
    // 2^31 materials announced in a 100-byte file (valid checksums throughout).
    let mut bytes = assemble(1 << 31, 0, [&config, &[], &[], &[]]);
    bytes.resize(100, 0);
    let err = NtcPackage::from_bytes(&bytes).expect_err("absurd");
    assert!(
        matches!(
            err,
            NtcFormatError::TooMany {
                count: 2_147_483_648,
                ..
            }
        ),
        "{err}"
    );
    let exact = assemble(1 << 31, 0, [&config, &[], &[], &[]]);
    assert!(matches!(
        NtcPackage::from_bytes(&exact),
        Err(NtcFormatError::TooMany { .. })
    ));
    // Under the cap but far more than the section holds: refused before any table.
    let bytes = assemble(60_000, 0, [&config, &[0; 8], &[], &[]]);
    let err = NtcPackage::from_bytes(&bytes).expect_err("short table");
    assert!(err.to_string().contains("60000 materials"), "{err}");
    // A section length of 2^62 bytes.
    let mut bytes = assemble(0, 0, [&config, &[], &[], &[]]);
    bytes[32..40].copy_from_slice(&(1u64 << 62).to_le_bytes());
    let crc = crc32fast::hash(&bytes[..HEADER_CRC_SPAN]);
    bytes[HEADER_CRC_SPAN..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(
        NtcPackage::from_bytes(&bytes),
        Err(NtcFormatError::Truncated { .. })
    ));
    // u64 overflow of the total.
    bytes[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    let crc = crc32fast::hash(&bytes[..HEADER_CRC_SPAN]);
    bytes[HEADER_CRC_SPAN..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    assert!(NtcPackage::from_bytes(&bytes).is_err());
    // A name longer than the cap.
    let mut table = Vec::new();
    put_u32(&mut table, 5000);
    table.resize(6000, 0);
    let err = NtcPackage::from_bytes(&assemble(1, 0, [&config, &table, &[], &[]]))
        .expect_err("long name");
    assert!(err.to_string().contains("name bytes"), "{err}");
    // A decoder count the section cannot hold.
    let err = NtcPackage::from_bytes(&assemble(0, 65_536, [&config, &[], &[0; 10], &[]]))
        .expect_err("decoders");
    assert!(err.to_string().starts_with("section `decoders`"), "{err}");
}

#[test]
fn inconsistent_packages_are_refused_both_ways() {
    let package = small_package();
    let mut bad = package.clone();
    bad.materials[0].decoder = 7;
    let err = bad.to_bytes().expect_err("decoder index");
    assert!(err.to_string().contains("decoder 7 of 2"), "{err}");
    // The same table written around the writer's checks is refused by the reader.
    let bytes = sections_of(&bad);
    let err = NtcPackage::from_bytes(&bytes).expect_err("decoder index");
    assert!(err.to_string().contains("decoder 7 of 2"), "{err}");

    let mut bad = package.clone();
    bad.materials[1].latents.pop();
    assert!(bad.to_bytes().is_err());
    let bytes = sections_of(&bad);
    let err = NtcPackage::from_bytes(&bytes).expect_err("latent words");
    assert!(err.to_string().starts_with("section `latents`"), "{err}");

    let mut bad = package.clone();
    bad.decoders[1][3] = f16::NAN;
    assert!(bad.to_bytes().is_err());
    let mut bad = package.clone();
    bad.materials[0].name = "x".repeat(MAX_NAME_BYTES + 1);
    assert!(matches!(
        bad.to_bytes(),
        Err(NtcFormatError::TooMany { .. })
    ));
    let mut bad = package;
    bad.materials[0].present = ChannelMask(1 << 14);
    assert!(bad.to_bytes().is_err());
    let other = NtcConfig {
        features: 8,
        ..small_config()
    };
    let mut p = NtcPackage::new(other).expect("package");
    let g = group(&small_config(), &[("a", 4, 4)], 1);
    assert!(p.add_group(&g, &[[1.0; CHANNELS]]).is_err());
    assert!(
        p.add_group(&group(&p.config.clone(), &[("a", 4, 4)], 1), &[])
            .is_err()
    );
}

#[test]
fn random_corruption_never_panics() {
    let bytes = small_package().to_bytes().expect("bytes");
    let mut rng = SplitMix64::new(99);
    for _ in 0..2000 {
        let mut bad = bytes.clone();
        for _ in 0..=rng.below(4) {
            let i = rng.below(bad.len() as u64) as usize;
            bad[i] = rng.next_u64() as u8;
        }
        let cut = rng.below(bad.len() as u64 + 1) as usize;
        let _ = NtcPackage::from_bytes(&bad[..cut]);
    }
    // Pure noise, with and without a valid magic.
    for len in [0, 3, 60, 61, 200] {
        let mut noise: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let _ = NtcPackage::from_bytes(&noise);
        if len >= 4 {
            noise[..4].copy_from_slice(&MAGIC);
            assert!(NtcPackage::from_bytes(&noise).is_err());
        }
    }
}
