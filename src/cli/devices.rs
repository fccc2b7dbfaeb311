//! `--devices all|0,2|N` of `compress`, `eval` and `view` (the devices training runs on,
//! [`neurotex::gpu::devices`]), one progress bar per device, and `neurotex devices`, the
//! list of adapters in the order `--devices` numbers them.

use anyhow::Result;
use clap::Args;
use indicatif::{MultiProgress, ProgressBar};

use neurotex::gpu::{DeviceSet, GpuContext, devices};
use neurotex::ntc;
use neurotex::ntc::parallel::{GroupProgress, cannot_train};

use super::steps_bar;

/// The `--devices` argument.
#[derive(Args, Debug)]
pub struct DevicesArg {
    /// Train on several GPUs at once: `all` (every adapter that can train; software ones
    /// only when no hardware adapter can), adapter indices such as `0,2` (a repeated index
    /// opens another device on that adapter), or N for the first N; `neurotex devices`
    /// lists them. Default: the one adapter of WGPU_ADAPTER_NAME or the high-performance
    /// one.
    #[arg(long, value_name = "all|I,J|N")]
    devices: Option<String>,
}

impl DevicesArg {
    /// Whether `--devices` was given.
    pub fn given(&self) -> bool {
        self.devices.is_some()
    }

    /// The devices to train `train` with `kernel` on: those of `--devices` (the adapters
    /// `all` left out are printed with the reason), else the default headless one. Each
    /// is printed.
    pub fn open(
        &self,
        train: &ntc::TrainConfig,
        kernel: Option<ntc::train::gpu::TrainKernel>,
    ) -> Result<DeviceSet> {
        let set = match &self.devices {
            None => DeviceSet::single(GpuContext::headless()?),
            Some(arg) => {
                let set = DeviceSet::open_arg(arg, &|ctx| cannot_train(ctx, train, kernel))?;
                for s in &set.skipped {
                    eprintln!("skipped adapter {}: {} — {}", s.index, s.adapter, s.reason);
                }
                set
            }
        };
        if self.given() {
            for line in set.describe() {
                eprintln!("{line}");
            }
        } else {
            eprintln!("{}", set.devices[0].describe());
        }
        Ok(set)
    }
}

/// One progress bar of training steps per device, each naming its adapter when there are
/// several.
pub struct DeviceBars {
    multi: MultiProgress,
    bars: Vec<ProgressBar>,
    names: Vec<String>,
}

impl DeviceBars {
    /// Bars of `template` (indicatif syntax, with `{prefix}`) for the devices of `set`.
    pub fn new(set: &DeviceSet, template: &str) -> Result<DeviceBars> {
        let multi = MultiProgress::new();
        let bars = set
            .devices
            .iter()
            .map(|_| Ok(multi.add(steps_bar(template)?)))
            .collect::<Result<Vec<_>>>()?;
        let names = if set.devices.len() > 1 {
            set.devices
                .iter()
                .enumerate()
                .map(|(d, ctx)| format!("[{d}] {} ", ctx.info.name))
                .collect()
        } else {
            vec![String::new()]
        };
        Ok(DeviceBars { multi, bars, names })
    }

    /// Show `p` on its device's bar: `prefix` after the device's name, the steps, and
    /// `message`.
    pub fn show(&self, p: &GroupProgress, prefix: &str, message: String) {
        if let Some(bar) = self.bars.get(p.device) {
            bar.set_prefix(format!("{}{prefix}", self.names[p.device]));
            bar.set_length(p.train.total);
            bar.set_position(p.train.step);
            bar.set_message(message);
        }
    }

    /// Whether the bars are hidden (no terminal).
    pub fn is_hidden(&self) -> bool {
        self.bars.iter().all(ProgressBar::is_hidden)
    }

    /// Run `f` with the bars cleared (for lines printed between them).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.multi.suspend(f)
    }

    /// Remove the bars.
    pub fn finish(&self) {
        for bar in &self.bars {
            bar.finish_and_clear();
        }
    }
}

/// The arguments of `neurotex devices` (none).
#[derive(Args, Debug)]
pub struct DevicesArgs {}

/// Run `neurotex devices`: every adapter with its index and whether it can train the
/// default recipe.
pub fn run(_: DevicesArgs) -> Result<()> {
    let train = ntc::Recipe::Default.train_config(ntc::Preset::High, None)?;
    let (instance, adapters) = devices::adapters();
    if adapters.is_empty() {
        println!("no adapters");
    }
    for (i, adapter) in adapters.into_iter().enumerate() {
        let name = neurotex::gpu::context::describe_adapter(&adapter.get_info());
        let verdict = match pollster::block_on(GpuContext::from_adapter(instance.clone(), adapter))
        {
            Ok(ctx) => match cannot_train(&ctx, &train, None) {
                None => "can train".to_string(),
                Some(reason) => format!("cannot train: {reason}"),
            },
            Err(e) => format!("cannot open a device: {e}"),
        };
        println!("[{i}] {name} — {verdict}");
    }
    Ok(())
}
