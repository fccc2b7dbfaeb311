//! Fuzz target: arbitrary bytes into the `.ntc` reader. It must return an error or a
//! package that writes back and reads again as the same package, and never panic or
//! allocate from unchecked sizes.
//!
//! Random bytes almost never carry valid CRC-32s, so each input is also tried with its
//! header and section checksums recomputed: that lets the fuzzer reach the config,
//! material-table, decoder and latent parsers.

#![no_main]

use libfuzzer_sys::fuzz_target;
use neurotex::ntc::NtcPackage;
use neurotex::ntc::format::HEADER_LEN;

/// Bytes of a section's tag, length and checksum.
const SECTION_HEADER_LEN: usize = 16;

/// Little-endian u64 at `at`, if the bytes are there.
fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// `data` with the header checksum and every complete section's checksum recomputed.
fn with_fixed_checksums(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    if out.len() < HEADER_LEN {
        return out;
    }
    let crc = crc32fast::hash(&out[..HEADER_LEN - 4]);
    out[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    let mut pos = HEADER_LEN;
    for _ in 0..4 {
        let Some(len) = u64_at(&out, pos + 4).and_then(|l| usize::try_from(l).ok()) else {
            break;
        };
        let start = pos + SECTION_HEADER_LEN;
        let Some(end) = start.checked_add(len).filter(|&e| e <= out.len()) else {
            break;
        };
        let crc = crc32fast::hash(&out[start..end]);
        out[pos + 12..pos + 16].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
    out
}

/// Read `bytes`; a package that reads must write back and read again unchanged.
fn check(bytes: &[u8]) {
    if let Ok(package) = NtcPackage::from_bytes(bytes) {
        let written = package
            .to_bytes()
            .expect("a package that was read writes back");
        let again = NtcPackage::from_bytes(&written).expect("a written package reads back");
        assert_eq!(
            again, package,
            "writing and reading back changes the package"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    check(&with_fixed_checksums(data));
});
