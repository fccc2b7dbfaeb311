//! Tests of the DDS and KTX2 readers and writers: round trips, refusals and decoders.

use super::*;
use ddsfile::{AlphaMode, Caps2, D3D10ResourceDimension, D3DFormat, Dds, DxgiFormat};

/// A `w × h` RGBA8 gradient with a varying alpha.
fn gradient(w: u32, h: u32) -> Vec<u8> {
    (0..w * h)
        .flat_map(|i| {
            let (x, y) = (i % w, i / w);
            [
                (x * 255 / w) as u8,
                (y * 255 / h) as u8,
                90,
                255 - (x * 7) as u8,
            ]
        })
        .collect()
}

/// `format`'s chain of a `w × h` gradient (each level the gradient of its size).
fn chain(format: BlockFormat, w: u32, h: u32) -> BlockChain {
    let levels = (0..full_chain(w, h))
        .map(|l| {
            let (lw, lh) = ((w >> l).max(1), (h >> l).max(1));
            super::super::bcn::encode_rgba(&gradient(lw, lh), lw, lh, format)
        })
        .collect();
    BlockChain {
        format,
        srgb: true,
        width: w,
        height: h,
        levels,
    }
}

/// What `texture2ddecoder` makes of `blocks` directly, as RGBA.
fn reference(format: BlockFormat, blocks: &[u8], w: u32, h: u32) -> Vec<[u8; 4]> {
    let mut out = vec![0u32; (w * h) as usize];
    let (w, h) = (w as usize, h as usize);
    match format {
        BlockFormat::Bc1 => texture2ddecoder::decode_bc1a(blocks, w, h, &mut out),
        BlockFormat::Bc3 => texture2ddecoder::decode_bc3(blocks, w, h, &mut out),
        BlockFormat::Bc4 => texture2ddecoder::decode_bc4(blocks, w, h, &mut out),
        BlockFormat::Bc5 => texture2ddecoder::decode_bc5(blocks, w, h, &mut out),
        BlockFormat::Bc7 => texture2ddecoder::decode_bc7(blocks, w, h, &mut out),
    }
    .expect("decode");
    out.iter()
        .map(|p| {
            let [b, g, r, a] = p.to_le_bytes();
            [r, g, b, a]
        })
        .collect()
}

#[test]
fn a_descriptor_block_dimension_of_256_is_an_error_not_a_panic() {
    let mut bytes = ktx2_bytes(&chain(BlockFormat::Bc1, 8, 4), "t.ktx2").expect("ktx2");
    let dfd = u32::from_le_bytes(bytes[48..52].try_into().expect("4 bytes")) as usize;
    Container::parse(&bytes, "t.ktx2").expect("as written");
    // The total size, the block header, 4 bytes of data, then the block dimensions.
    bytes[dfd + 4 + 8 + 4] = 255;
    let e = Container::parse(&bytes, "t.ktx2").unwrap_err().to_string();
    assert!(
        e.contains("t.ktx2") && e.contains("texel block dimension"),
        "{e}"
    );
}

#[test]
fn written_chains_read_back_level_by_level() {
    let (w, h) = (20, 12);
    for format in [
        BlockFormat::Bc1,
        BlockFormat::Bc3,
        BlockFormat::Bc5,
        BlockFormat::Bc7,
    ] {
        let chain = chain(format, w, h);
        for (kind, bytes) in [
            (ContainerKind::Dds, dds_bytes(&chain, "t.dds").expect("dds")),
            (
                ContainerKind::Ktx2,
                ktx2_bytes(&chain, "t.ktx2").expect("ktx2"),
            ),
        ] {
            let c = Container::parse(&bytes, "t")
                .unwrap_or_else(|e| panic!("{format:?} {kind:?}: {e}"));
            assert_eq!((c.kind, c.width, c.height, c.levels.len()), (kind, w, h, 5));
            assert_eq!(c.encoding, Encoding::Block(format.kind()));
            for (l, blocks) in chain.levels.iter().enumerate() {
                assert_eq!(c.levels[l], &blocks[..], "{format:?} {kind:?} level {l}");
                let (lw, lh) = c.level_size(l);
                let img = c.decode_level(l, "t").expect("decode");
                let want = reference(format, blocks, lw, lh);
                let ch = img.channels as usize;
                let Samples::U8(s) = &img.samples else {
                    panic!("8-bit")
                };
                assert_eq!(s.len(), want.len() * ch);
                for (px, want) in s.chunks_exact(ch).zip(&want) {
                    match format {
                        BlockFormat::Bc5 => {
                            assert_eq!(&px[..2], &want[..2]);
                            assert_eq!(px[2] as f32, rebuilt_z(px[0].into(), px[1].into(), 255.0));
                        }
                        BlockFormat::Bc1 => assert_eq!(px, &want[..ch]),
                        _ => assert_eq!(px, want),
                    }
                }
            }
        }
    }
}

#[test]
fn ktx2_output_has_the_header_another_reader_expects() {
    let chain = chain(BlockFormat::Bc7, 16, 8);
    let bytes = ktx2_bytes(&chain, "t.ktx2").expect("ktx2");
    let r = ktx2::Reader::new(&bytes[..]).expect("the ktx2 crate reads it");
    let h = r.header();
    assert_eq!(h.format, Some(ktx2::Format::BC7_SRGB_BLOCK));
    assert_eq!((h.pixel_width, h.pixel_height, h.level_count), (16, 8, 5));
    assert_eq!(r.transfer_function(), Some(ktx2::TransferFunction::SRGB));
    assert_eq!(r.color_model(), Some(ktx2::ColorModel::BC7));
    let levels: Vec<&[u8]> = r.levels().map(|l| l.data).collect();
    for (got, want) in levels.iter().zip(&chain.levels) {
        assert_eq!(*got, &want[..]);
    }
    let dds = Dds::read(&dds_bytes(&chain, "t.dds").expect("dds")[..]).expect("ddsfile reads it");
    assert_eq!(dds.get_dxgi_format(), Some(DxgiFormat::BC7_UNorm_sRGB));
    assert_eq!(dds.get_num_mipmap_levels(), 5);
    assert_eq!(
        dds.get_data(0).expect("layer").len(),
        chain.levels.iter().map(Vec::len).sum::<usize>()
    );
}

fn dxgi(
    format: DxgiFormat,
    w: u32,
    h: u32,
    mips: u32,
    layers: Option<u32>,
    cube: bool,
    depth: Option<u32>,
) -> Vec<u8> {
    let dds = Dds::new_dxgi(ddsfile::NewDxgiParams {
        height: h,
        width: w,
        depth,
        format,
        mipmap_levels: Some(mips),
        array_layers: layers,
        caps2: depth.map(|_| Caps2::VOLUME),
        is_cubemap: cube,
        resource_dimension: if depth.is_some() {
            D3D10ResourceDimension::Texture3D
        } else {
            D3D10ResourceDimension::Texture2D
        },
        alpha_mode: AlphaMode::Unknown,
    })
    .expect("dds");
    let mut out = Vec::new();
    dds.write(&mut out).expect("write");
    out
}

#[test]
fn uncompressed_dds_reads_every_level() {
    let mut bytes = dxgi(DxgiFormat::R8G8B8A8_UNorm, 4, 2, 3, None, false, None);
    let header = bytes.len() - (4 * 2 + 2 + 1) * 4;
    for (i, b) in bytes[header..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let c = Container::parse(&bytes, "rgba.dds").expect("parse");
    assert_eq!(c.levels.len(), 3);
    let l1 = c.decode_level(1, "rgba.dds").expect("level 1");
    assert_eq!((l1.width, l1.height, l1.channels), (2, 1, 4));
    assert_eq!(l1.samples, Samples::U8((32..40).collect()));

    // Legacy A8R8G8B8 is stored B, G, R, A.
    let dds = Dds::new_d3d(ddsfile::NewD3dParams {
        height: 1,
        width: 1,
        depth: None,
        format: D3DFormat::A8R8G8B8,
        mipmap_levels: None,
        caps2: None,
    })
    .expect("dds");
    let mut bytes = Vec::new();
    dds.write(&mut bytes).expect("write");
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&[10, 20, 30, 40]);
    let img = Container::parse(&bytes, "argb.dds")
        .expect("parse")
        .decode_level(0, "argb.dds")
        .expect("decode");
    assert_eq!(img.samples, Samples::U8(vec![30, 20, 10, 40]));

    // Two channels read as a normal's X and Y; Z is rebuilt.
    let mut bytes = dxgi(DxgiFormat::R8G8_UNorm, 1, 1, 1, None, false, None);
    let n = bytes.len();
    bytes[n - 2..].copy_from_slice(&[128, 128]);
    let img = Container::parse(&bytes, "rg.dds")
        .expect("parse")
        .decode_level(0, "rg.dds")
        .expect("decode");
    assert_eq!(img.samples, Samples::U8(vec![128, 128, 255]));
}

fn refused(bytes: &[u8], needle: &str) {
    let e = Container::parse(bytes, "bad.tex").expect_err(needle);
    let msg = e.to_string();
    assert!(msg.contains("bad.tex") && msg.contains(needle), "{msg}");
}

#[test]
fn arrays_cubemaps_volumes_and_bad_sizes_are_refused() {
    refused(
        &dxgi(DxgiFormat::BC1_UNorm, 8, 8, 1, Some(3), false, None),
        "array of 3 layers",
    );
    refused(
        &dxgi(DxgiFormat::BC1_UNorm, 8, 8, 1, Some(6), true, None),
        "cubemap",
    );
    refused(
        &dxgi(DxgiFormat::R8_UNorm, 8, 8, 1, None, false, Some(4)),
        "volume",
    );
    refused(
        &dxgi(DxgiFormat::R32_Float, 8, 8, 1, None, false, None),
        "R32_Float",
    );
    let ok = dxgi(DxgiFormat::BC7_UNorm, 8, 8, 4, None, false, None);
    refused(&ok[..ok.len() - 1], "truncated");
    // A header announcing 20 levels for 8×8 texels, and one of 0×8.
    let mut many = ok.clone();
    many[4 + 24..4 + 28].copy_from_slice(&20u32.to_le_bytes());
    refused(&many, "at most 4");
    let mut empty = ok.clone();
    empty[4 + 12..4 + 16].copy_from_slice(&0u32.to_le_bytes());
    refused(&empty, "outside the accepted size");
    refused(b"DDS garbage", "DDS header");

    let chain = chain(BlockFormat::Bc1, 8, 8);
    let good = ktx2_bytes(&chain, "t.ktx2").expect("ktx2");
    let patched = |at: usize, value: u32| {
        let mut b = good.clone();
        b[at..at + 4].copy_from_slice(&value.to_le_bytes());
        b
    };
    // Header words after the 12-byte identifier: format, type size, width, height,
    // depth, layers, faces, levels, supercompression.
    refused(&patched(12 + 4 * 6, 6), "cubemap");
    refused(&patched(12 + 4 * 5, 2), "array of 2 layers");
    refused(&patched(12 + 4 * 4, 2), "volume");
    refused(&patched(12 + 4 * 8, 1), "BasisLZ/ETC1S");
    refused(&patched(12, 0), "not UASTC");
    refused(&patched(12 + 4 * 2, 64), "holds");
    refused(&good[..good.len() - 3], "KTX2");
}

/// The data format descriptor of 4×4 blocks of 16 bytes in colour `model` (BT.709,
/// linear) with one 128-bit sample of `channel`.
fn block_dfd(model: u32, channel: u32) -> [u32; 11] {
    let sample = (127 << 16) | (channel << 24);
    [
        44,
        0,
        2 | (40 << 16),
        model | (1 << 8) | (1 << 16),
        3 | (3 << 8),
        16,
        0,
        sample,
        0,
        0,
        u32::MAX,
    ]
}

/// A KTX2 file of UASTC (colour model 166) `levels` (level 0 first) whose descriptor
/// names `channel`.
fn uastc_ktx2(channel: u32, (w, h): (u32, u32), levels: &[Vec<u8>]) -> Vec<u8> {
    ktx2_container(0, &block_dfd(166, channel), 16, (w, h), levels)
}

#[test]
fn uastc_ktx2_is_read_with_the_basis_feature_and_refused_by_name_without() {
    // Any 16-byte blocks make a well-formed container; without the feature it is
    // refused before the blocks matter.
    let bytes = uastc_ktx2(3, (8, 8), &[vec![0; 64]]);
    let short = uastc_ktx2(3, (8, 8), &[vec![0; 63]]);
    let unknown = uastc_ktx2(9, (8, 8), &[vec![0; 64]]);
    if cfg!(feature = "basis") {
        let c = Container::parse(&bytes, "u.ktx2").expect("UASTC container");
        assert_eq!((c.encoding.lossy(), c.channels()), (Some("UASTC"), 4));
        refused(&short, "holds 63 bytes");
        refused(&unknown, "channel id Some(9)");
    } else {
        for b in [&bytes, &short, &unknown] {
            refused(b, "--features basis");
        }
    }
}

/// UASTC blocks of an RGBA image made by Binomial's encoder: its `.basis` file's one
/// slice (header and slice descriptor as `basisu_file_headers.h` lays them out).
#[cfg(feature = "basis")]
fn uastc_blocks(rgba: &[u8], w: u32, h: u32) -> Vec<u8> {
    use basis_universal::{BasisTextureFormat, Compressor, CompressorParams};
    let mut params = CompressorParams::new();
    params.set_basis_format(BasisTextureFormat::UASTC4x4);
    params.set_generate_mipmaps(false);
    params.source_image_mut(0).init(rgba, w, h, 4);
    let mut compressor = Compressor::new(1);
    // SAFETY: the parameters outlive `init`, which copies them; `process` runs on
    // the compressor's own copy.
    #[expect(unsafe_code, reason = "the binding's encoder entry points are unsafe")]
    unsafe {
        assert!(compressor.init(&params));
        compressor.process().expect("UASTC encoding");
    }
    let file = compressor.basis_file().to_vec();
    let uint = |at: usize, n: usize| {
        (0..n).fold(0usize, |v, i| v | (usize::from(file[at + i]) << (8 * i)))
    };
    assert_eq!(uint(14, 3), 1, "one slice");
    let slice = uint(65, 4);
    let (offset, size) = (uint(slice + 13, 4), uint(slice + 17, 4));
    file[offset..offset + size].to_vec()
}

#[cfg(feature = "basis")]
#[test]
fn uastc_levels_decode_close_to_their_source_in_every_channel_layout() {
    let (w, h) = (16, 12);
    let rgba = gradient(w, h);
    let blocks = uastc_blocks(&rgba, w, h);
    assert_eq!(blocks.len(), 4 * 3 * 16);
    // RGBA (3), RGB (0), R (4), R + A (5), and R, G with Z rebuilt (6).
    for (channel, taken) in [
        (3, &[0, 1, 2, 3][..]),
        (0, &[0, 1, 2]),
        (4, &[0]),
        (5, &[0, 3]),
    ] {
        let bytes = uastc_ktx2(channel, (w, h), std::slice::from_ref(&blocks));
        let c = Container::parse(&bytes, "u.ktx2").expect("UASTC container");
        let image = c.decode_level(0, "u.ktx2").expect("transcoded");
        let Samples::U8(got) = &image.samples else {
            panic!("8-bit samples")
        };
        assert_eq!(
            usize::from(image.channels),
            taken.len(),
            "channel id {channel}"
        );
        let worst = (0..(w * h) as usize)
            .flat_map(|t| taken.iter().enumerate().map(move |(k, &src)| (t, k, src)))
            .map(|(t, k, src)| {
                let a = i32::from(got[t * taken.len() + k]);
                (a - i32::from(rgba[t * 4 + src])).abs()
            })
            .max()
            .unwrap();
        assert!(worst <= 16, "channel id {channel}: worst error {worst}");
    }
    let normal = uastc_ktx2(6, (w, h), std::slice::from_ref(&blocks));
    let image = Container::parse(&normal, "n.ktx2")
        .and_then(|c| c.decode_level(0, "n.ktx2"))
        .expect("transcoded normal");
    assert_eq!(image.channels, 3);
}

/// A KTX2 file of one 8×4 BC6H level (two blocks; colour model 133, VkFormat 143).
fn bc6h_ktx2(blocks: [[u8; 16]; 2]) -> Vec<u8> {
    ktx2_container(143, &block_dfd(133, 0), 16, (8, 4), &[blocks.concat()])
}

#[test]
fn bc6h_decodes_every_mode_as_an_independent_decoder_does_without_panicking() {
    // Mode 15 (five mode bits 01111: 16-bit endpoints, transformed) next to a mode-3
    // block (two mode bits 11 with 00 → five bits 00011: 10-bit endpoints).
    let mut mode15 = [0x5Au8; 16];
    mode15[0] = (mode15[0] & !0x1F) | 0x0F;
    let mut mode3 = [0xA7u8; 16];
    mode3[0] = (mode3[0] & !0x1F) | 0x03;
    let bytes = bc6h_ktx2([mode15, mode3]);
    let c = Container::parse(&bytes, "h.ktx2").expect("BC6H container");
    let image = c.decode_level(0, "h.ktx2").expect("decoded");
    let Samples::U8(got) = &image.samples else {
        panic!("8-bit samples")
    };
    assert_eq!((image.channels, got.len()), (3, 8 * 4 * 3));
    // texture2ddecoder agrees on the block it decodes correctly.
    let mut packed = vec![0u32; 16];
    texture2ddecoder::decode_bc6(&mode3, 4, 4, &mut packed, false).unwrap();
    for (t, p) in packed.iter().enumerate() {
        let [b, g, r, _] = p.to_le_bytes();
        let (x, y) = (4 + t % 4, t / 4);
        let at = (y * 8 + x) * 3;
        for (k, want) in [r, g, b].into_iter().enumerate() {
            assert!(got[at + k].abs_diff(want) <= 1, "texel {t}");
        }
    }
}
