//! The memory budget: how many bytes one decode, texture set or package may ask for
//! before anything is allocated for it.
//!
//! Sizes in files (image headers, package tables) are claims; a few hundred bytes can
//! claim gigabytes. Every path that allocates from such a size first estimates the bytes
//! it will need and calls [`check`], which refuses with "needs N bytes, limit M". The
//! limit is [`DEFAULT_LIMIT`] (4 GiB), or `NEUROTEX_MEMORY_BUDGET` (bytes, or with a
//! `K`/`M`/`G` suffix, powers of 1024) when set.

/// The budget when `NEUROTEX_MEMORY_BUDGET` is not set: 4 GiB.
pub const DEFAULT_LIMIT: u64 = 4 << 30;

/// The environment variable that overrides [`DEFAULT_LIMIT`].
pub const ENV: &str = "NEUROTEX_MEMORY_BUDGET";

/// A request over the budget.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} needs {needed} bytes, limit {limit} (set {ENV} to raise the limit, or downscale with --max-texture-size)"
)]
pub struct OverBudget {
    /// What would have been allocated (names the file and the part).
    pub what: String,
    /// Bytes it needs.
    pub needed: u64,
    /// The budget.
    pub limit: u64,
}

/// An unusable `NEUROTEX_MEMORY_BUDGET`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{ENV}=`{value}` is not a memory budget: expected a positive whole number of bytes, \
     optionally with K, M or G (powers of 1024), e.g. 512M or 8G"
)]
pub struct BadBudget {
    /// The variable's value (lossily decoded).
    pub value: String,
}

/// The budget `NEUROTEX_MEMORY_BUDGET` sets (`None` when it is not set), or why its
/// value is unusable. The command line calls this before any command runs, so a bad
/// value is an error there rather than the default.
pub fn from_env() -> Result<Option<u64>, BadBudget> {
    let Some(value) = std::env::var_os(ENV) else {
        return Ok(None);
    };
    let text = value.to_string_lossy();
    match value.to_str().and_then(parse) {
        Some(n) => Ok(Some(n)),
        None => Err(BadBudget {
            value: text.into_owned(),
        }),
    }
}

/// The budget in force: `NEUROTEX_MEMORY_BUDGET` when set and valid, else
/// [`DEFAULT_LIMIT`] (library callers that did not check [`from_env`] first).
pub fn limit() -> u64 {
    from_env().ok().flatten().unwrap_or(DEFAULT_LIMIT)
}

/// `1234`, `512M`, `8G` (powers of 1024) → bytes.
pub fn parse(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, shift) = match t.as_bytes().last()? {
        b'k' | b'K' => (&t[..t.len() - 1], 10),
        b'm' | b'M' => (&t[..t.len() - 1], 20),
        b'g' | b'G' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(1u64 << shift).filter(|&n| n > 0)
}

/// `Ok` when `needed` bytes fit in `limit`, else [`OverBudget`] naming `what`.
pub fn check(what: impl FnOnce() -> String, needed: u64, limit: u64) -> Result<(), OverBudget> {
    if needed <= limit {
        Ok(())
    } else {
        Err(OverBudget {
            what: what(),
            needed,
            limit,
        })
    }
}

/// `a · b · …` in u64, saturating (an estimate that overflows is over any budget).
pub fn product(factors: &[u64]) -> u64 {
    factors
        .iter()
        .try_fold(1u64, |acc, &f| acc.checked_mul(f))
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_refuses_over_the_limit() {
        assert_eq!(parse("1234"), Some(1234));
        assert_eq!(parse("512M"), Some(512 << 20));
        assert_eq!(parse(" 8g "), Some(8 << 30));
        assert_eq!(parse("0"), None);
        assert_eq!(parse("lots"), None);
        assert_eq!(parse("99999999999G"), None);
        for bad in ["8GB", "-1", "lots", "", "1.5G"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert!(check(|| "x".into(), 10, 10).is_ok());
        let e = check(|| "the set `brick`".into(), 11, 10).unwrap_err();
        assert_eq!((e.needed, e.limit), (11, 10));
        let msg = e.to_string();
        assert!(
            msg.contains("the set `brick` needs 11 bytes, limit 10"),
            "{msg}"
        );
        assert_eq!(product(&[1 << 40, 1 << 40]), u64::MAX);
        assert_eq!(product(&[3, 4, 5]), 60);
    }
}
