//! Several devices for one job: `--devices all|0,2|N` parsed ([`DeviceChoice`]) and opened
//! ([`DeviceSet`]), one [`GpuContext`] (device and queue) per chosen adapter.
//!
//! Adapters are numbered in the order wgpu enumerates them on the backends of
//! [`GpuContext::instance_descriptor`] ([`adapters`]; `neurotex devices` prints the list).
//!
//! - `all`: every adapter that the caller's check accepts (for training: the trainer's
//!   kernels build there); software adapters (device type `Cpu`, e.g. lavapipe) only when
//!   no hardware adapter qualifies, since one would hold up a job on real GPUs. What was
//!   left out, and why, is in [`DeviceSet::skipped`].
//! - `0,2`: those indices. An index may repeat (`0,0`): each time a further device on the
//!   same adapter, so small jobs overlap on a big GPU (and one adapter can exercise several
//!   workers).
//! - `N` (N ≥ 1): the first N adapters. `0` alone is the list `[0]`.
//!
//! A chosen adapter that fails the check, an index past the list, or an argument that is
//! none of these is one [`DevicesError`] that lists the adapters present. Without
//! `--devices` callers keep [`GpuContext::headless`] (its adapter choice and
//! `WGPU_ADAPTER_NAME`); `--devices` chooses by index and ignores that variable.

use std::fmt;

use super::context::{GpuContext, GpuError, describe_adapter};

/// Which adapters `--devices` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// Every adapter that qualifies.
    All,
    /// The first `N` adapters of the enumeration.
    First(usize),
    /// These indices of the enumeration, repeats allowed.
    Indices(Vec<usize>),
}

/// Errors of choosing and opening devices.
#[derive(Debug, thiserror::Error)]
pub enum DevicesError {
    /// The argument is not `all`, a list of indices or a count.
    #[error(
        "invalid --devices `{arg}`: {reason} (expected `all`, adapter indices such as `0,2`, \
         or a count N for the first N); adapters present: {present}"
    )]
    Arg {
        /// The argument.
        arg: String,
        /// What is wrong.
        reason: String,
        /// [`AdapterList`] of the adapters present.
        present: AdapterList,
    },
    /// An index (or count) past the adapters present.
    #[error("--devices {arg}: there is no adapter {index}; adapters present: {present}")]
    NoSuchAdapter {
        /// The argument.
        arg: String,
        /// The first missing index.
        index: usize,
        /// The adapters present.
        present: AdapterList,
    },
    /// A chosen adapter cannot do the job.
    #[error(
        "--devices {arg}: adapter {index} cannot be used: {reason}; adapters present: {present}"
    )]
    Unusable {
        /// The argument.
        arg: String,
        /// The adapter's index.
        index: usize,
        /// Why (the caller's check, or device creation).
        reason: String,
        /// The adapters present.
        present: AdapterList,
    },
    /// `all` found no adapter that qualifies.
    #[error("--devices all: no adapter can be used; adapters present: {present}")]
    NoneUsable {
        /// The adapters present, each with why it was left out.
        present: AdapterList,
    },
}

/// Most devices one job may ask for (a count, a list's length, and one more than the
/// largest index): far more adapters than one host holds, and small enough that nothing
/// sized from the argument can exhaust memory.
pub const MAX_DEVICES: usize = 256;

impl std::str::FromStr for DeviceChoice {
    type Err = String;

    /// `all`, `0,2` (indices), `N` (the first N; `0` is index 0). The error says what is
    /// wrong; [`DeviceSet::open_arg`] adds the adapters present.
    fn from_str(arg: &str) -> Result<Self, String> {
        let arg = arg.trim();
        if arg.is_empty() {
            return Err("it is empty".into());
        }
        if arg.eq_ignore_ascii_case("all") {
            return Ok(DeviceChoice::All);
        }
        let index = |part: &str| -> Result<usize, String> {
            let part = part.trim();
            match part.parse::<usize>() {
                Ok(i) if i <= MAX_DEVICES => Ok(i),
                _ if part.is_empty() => Err("an index of the list is empty".to_string()),
                _ if part.bytes().all(|b| b.is_ascii_digit()) => Err(format!(
                    "`{part}` is more than a job may ask for (at most {MAX_DEVICES} devices)"
                )),
                _ => Err(format!("`{part}` is not an adapter index")),
            }
        };
        if arg.contains(',') {
            if arg.split(',').count() > MAX_DEVICES {
                return Err(format!("a list of more than {MAX_DEVICES} devices"));
            }
            return arg
                .split(',')
                .map(index)
                .collect::<Result<Vec<_>, _>>()
                .map(DeviceChoice::Indices);
        }
        match index(arg)? {
            0 => Ok(DeviceChoice::Indices(vec![0])),
            n => Ok(DeviceChoice::First(n)),
        }
    }
}

impl fmt::Display for DeviceChoice {
    /// The argument form: `all`, `0,2`, `3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceChoice::All => f.write_str("all"),
            DeviceChoice::First(n) => write!(f, "{n}"),
            DeviceChoice::Indices(list) => {
                let list: Vec<String> = list.iter().map(usize::to_string).collect();
                f.write_str(&list.join(","))
            }
        }
    }
}

/// The adapters present, for error messages: `[0] name (backend, driver, type); [1] …`,
/// each optionally with why it cannot be used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdapterList(pub Vec<(String, Option<String>)>);

impl fmt::Display for AdapterList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, (name, why)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "[{i}] {name}")?;
            if let Some(why) = why {
                write!(f, " (not usable: {why})")?;
            }
        }
        Ok(())
    }
}

/// The instance and adapters `--devices` numbers, in enumeration order.
pub fn adapters() -> (wgpu::Instance, Vec<wgpu::Adapter>) {
    let descriptor = GpuContext::instance_descriptor();
    let backends = descriptor.backends;
    let instance = wgpu::Instance::new(descriptor);
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));
    (instance, adapters)
}

/// One adapter left out of `all`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Its index.
    pub index: usize,
    /// [`describe_adapter`] of it.
    pub adapter: String,
    /// Why it was left out.
    pub reason: String,
}

/// The opened devices of a job, in the order chosen, and the adapters `all` left out.
#[derive(Clone, Debug)]
pub struct DeviceSet {
    /// One context per chosen adapter (a repeated index opens its adapter again).
    pub devices: Vec<GpuContext>,
    /// The adapter index of each device.
    pub indices: Vec<usize>,
    /// Adapters `all` left out, with the reason.
    pub skipped: Vec<Skipped>,
}

impl DeviceSet {
    /// One device, the caller's (no `--devices`).
    pub fn single(ctx: GpuContext) -> DeviceSet {
        DeviceSet {
            devices: vec![ctx],
            indices: vec![0],
            skipped: Vec::new(),
        }
    }

    /// Parse `arg` ([`DeviceChoice`]) and [`open`](Self::open) it; a bad argument is an
    /// error that lists the adapters present.
    pub fn open_arg(
        arg: &str,
        usable: &dyn Fn(&GpuContext) -> Option<String>,
    ) -> Result<DeviceSet, DevicesError> {
        match arg.parse::<DeviceChoice>() {
            Ok(choice) => Self::open(&choice, usable),
            Err(reason) => Err(DevicesError::Arg {
                arg: arg.to_string(),
                reason,
                present: present(&adapters().1, &[]),
            }),
        }
    }

    /// Open the devices of `choice`. `usable` says why a device cannot do the job (`None`
    /// when it can): `all` skips such adapters, an explicit choice of one is an error.
    pub fn open(
        choice: &DeviceChoice,
        usable: &dyn Fn(&GpuContext) -> Option<String>,
    ) -> Result<DeviceSet, DevicesError> {
        let (instance, adapters) = adapters();
        let arg = choice.to_string();
        let open = |index: usize| -> Result<GpuContext, String> {
            let ctx = pollster::block_on(GpuContext::from_adapter(
                instance.clone(),
                adapters[index].clone(),
            ))
            .map_err(|e: GpuError| e.to_string())?;
            match usable(&ctx) {
                None => Ok(ctx),
                Some(reason) => Err(reason),
            }
        };
        let wanted: Vec<usize> = match choice {
            DeviceChoice::All => {
                let mut opened = Vec::new();
                let mut skipped = Vec::new();
                for index in 0..adapters.len() {
                    match open(index) {
                        Ok(ctx) => opened.push((index, ctx)),
                        Err(reason) => skipped.push((index, reason)),
                    }
                }
                let is_cpu = |ctx: &GpuContext| ctx.info.device_type == wgpu::DeviceType::Cpu;
                if opened.iter().any(|(_, ctx)| !is_cpu(ctx)) {
                    let (software, hardware): (Vec<_>, Vec<_>) =
                        opened.into_iter().partition(|(_, ctx)| is_cpu(ctx));
                    skipped.extend(software.into_iter().map(|(index, _)| {
                        (
                            index,
                            "a software adapter, and hardware adapters are present".to_string(),
                        )
                    }));
                    opened = hardware;
                }
                skipped.sort_by_key(|s| s.0);
                if opened.is_empty() {
                    return Err(DevicesError::NoneUsable {
                        present: present(&adapters, &skipped),
                    });
                }
                return Ok(DeviceSet {
                    indices: opened.iter().map(|(i, _)| *i).collect(),
                    devices: opened.into_iter().map(|(_, ctx)| ctx).collect(),
                    skipped: skipped
                        .into_iter()
                        .map(|(index, reason)| Skipped {
                            index,
                            adapter: describe_adapter(&adapters[index].get_info()),
                            reason,
                        })
                        .collect(),
                });
            }
            DeviceChoice::First(n) => (0..*n).collect(),
            DeviceChoice::Indices(list) => list.clone(),
        };
        if let Some(&index) = wanted.iter().find(|&&i| i >= adapters.len()) {
            return Err(DevicesError::NoSuchAdapter {
                arg,
                index,
                present: present(&adapters, &[]),
            });
        }
        let mut devices = Vec::with_capacity(wanted.len());
        for &index in &wanted {
            devices.push(open(index).map_err(|reason| DevicesError::Unusable {
                arg: arg.clone(),
                index,
                reason,
                present: present(&adapters, &[]),
            })?);
        }
        Ok(DeviceSet {
            devices,
            indices: wanted,
            skipped: Vec::new(),
        })
    }

    /// One line per device: `device d: adapter i, <describe>`.
    pub fn describe(&self) -> Vec<String> {
        self.devices
            .iter()
            .zip(&self.indices)
            .enumerate()
            .map(|(d, (ctx, i))| format!("device {d}: adapter {i}, {}", ctx.describe()))
            .collect()
    }
}

/// The list of `adapters` with the reasons of `skipped` (index, reason).
fn present(adapters: &[wgpu::Adapter], skipped: &[(usize, String)]) -> AdapterList {
    AdapterList(
        adapters
            .iter()
            .enumerate()
            .map(|(i, a)| {
                (
                    describe_adapter(&a.get_info()),
                    skipped.iter().find(|s| s.0 == i).map(|s| s.1.clone()),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_arguments() {
        let parse = |s: &str| s.parse::<DeviceChoice>();
        assert_eq!(parse("all"), Ok(DeviceChoice::All));
        assert_eq!(parse(" ALL "), Ok(DeviceChoice::All));
        assert_eq!(parse("0,2"), Ok(DeviceChoice::Indices(vec![0, 2])));
        assert_eq!(parse("0, 0"), Ok(DeviceChoice::Indices(vec![0, 0])));
        assert_eq!(parse("0"), Ok(DeviceChoice::Indices(vec![0])));
        assert_eq!(parse("3"), Ok(DeviceChoice::First(3)));
        for (bad, why) in [
            ("", "empty"),
            ("  ", "empty"),
            ("x", "`x` is not an adapter index"),
            ("0,", "empty"),
            ("1,,2", "empty"),
            ("-1", "`-1`"),
            ("0,two", "`two`"),
            // Counts and indices that would size allocations are bounded first.
            ("18446744073709551615", "at most 256 devices"),
            ("1099511627776", "at most 256 devices"),
            ("99999999999999999999999", "at most 256 devices"),
            ("0,1099511627776", "at most 256 devices"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        let long = vec!["0"; MAX_DEVICES + 1].join(",");
        assert!(parse(&long).unwrap_err().contains("more than 256"));
        assert_eq!(parse("256"), Ok(DeviceChoice::First(256)));
        for choice in ["all", "0,2", "3", "0"] {
            assert_eq!(parse(choice).unwrap().to_string(), choice);
        }
    }

    #[test]
    fn adapter_lists_name_every_adapter() {
        assert_eq!(AdapterList::default().to_string(), "none");
        let list = AdapterList(vec![
            ("gpu a".into(), None),
            ("cpu b".into(), Some("too small".into())),
        ]);
        assert_eq!(
            list.to_string(),
            "[0] gpu a; [1] cpu b (not usable: too small)"
        );
    }
}
