//! Training a run's groups on several devices at once (`--devices`): one worker thread
//! per device ([`crate::gpu::devices::DeviceSet`]) pulls the next group from one shared
//! queue, so a device that finishes early takes the next group. With more than one device
//! the queue holds the largest groups (by texels, every mip of every member) first, ties
//! by plan order — the longest-processing-time rule, which keeps the makespan near the
//! largest group's time; with one device it is plan order, as a run without `--devices`.
//!
//! Every group trains exactly as it would alone (its seed is `seed + g`, whatever device
//! takes it), and [`super::compress`] assembles the package in plan order, so in
//! deterministic mode the package is byte-identical to a one-device run. Progress reports
//! name their device ([`GroupProgress`]) and reach the caller on its own thread.
//!
//! Stopping: setting the caller's `cancel` (Ctrl-C) or a failed group sets the workers'
//! stop flag; a group in training stops at its next chunk (its checkpoint is saved), no
//! worker takes another group, and finished groups stay finished.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::train::TrainConfig;
use super::train::gpu::{TrainKernel, TrainProgress};
use crate::gpu::GpuContext;

/// Progress of one group's training on one device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupProgress {
    /// The device (index into the run's devices).
    pub device: usize,
    /// The group (plan index).
    pub group: usize,
    /// Groups in the plan.
    pub groups: usize,
    /// The trainer's progress.
    pub train: TrainProgress,
}

/// Why `ctx` cannot train `config` with `kernel` (`None`: the adapter's best, whose
/// fallback is `f32`), or `None` when it can: the check `--devices` applies to each
/// adapter.
pub fn cannot_train(
    ctx: &GpuContext,
    config: &TrainConfig,
    kernel: Option<TrainKernel>,
) -> Option<String> {
    kernel
        .unwrap_or(TrainKernel::F32)
        .unavailable(ctx, &config.model)
}

/// The order items of `weights` are handed out in to `devices` workers: positions,
/// largest weight first (ties by position) when there are several devices, else as given.
pub fn hand_out_order(weights: &[u64], devices: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..weights.len()).collect();
    if devices > 1 {
        order.sort_by(|&a, &b| weights[b].cmp(&weights[a]).then(a.cmp(&b)));
    }
    order
}

/// What a worker tells the calling thread.
enum Message<T, E> {
    Progress(GroupProgress),
    Done(usize, Result<T, E>),
}

/// One job of [`run_on_devices`]: `(device, its context (a [`GpuContext`]), item, stop flag, report)`; the
/// job passes the stop flag to the trainer and its progress to `report`.
pub(crate) type Job<'a, D, T, E> =
    dyn Fn(usize, &D, usize, &AtomicBool, &dyn Fn(GroupProgress)) -> Result<T, E> + Sync + 'a;

/// Run `job` for every item of `weights` (see the module docs for the order and
/// stopping) on a worker thread per device; `progress` hears every report on this thread.
/// Returns each item's result, `None` for items no worker started.
pub(crate) fn run_on_devices<D: Sync, T: Send, E: Send>(
    devices: &[D],
    weights: &[u64],
    cancel: &AtomicBool,
    job: &Job<'_, D, T, E>,
    progress: &mut dyn FnMut(&GroupProgress),
) -> Vec<Option<Result<T, E>>> {
    let order = hand_out_order(weights, devices.len());
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(cancel.load(Ordering::Relaxed));
    let mut results: Vec<Option<Result<T, E>>> = weights.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<Message<T, E>>();
        for (device, ctx) in devices.iter().enumerate() {
            let tx = tx.clone();
            let (order, next, stop) = (&order, &next, &stop);
            scope.spawn(move || {
                let report = |p: GroupProgress| {
                    let _ = tx.send(Message::Progress(p));
                };
                while !stop.load(Ordering::Relaxed) {
                    let Some(&item) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let result = job(device, ctx, item, stop, &report);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    let _ = tx.send(Message::Done(item, result));
                }
            });
        }
        drop(tx);
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Message::Progress(p)) => progress(&p),
                Ok(Message::Done(item, result)) => results[item] = Some(result),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if cancel.load(Ordering::Relaxed) {
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_groups_go_first_on_several_devices() {
        let weights = [10, 40, 40, 5, 90];
        assert_eq!(hand_out_order(&weights, 2), vec![4, 1, 2, 0, 3]);
        assert_eq!(hand_out_order(&weights, 8), vec![4, 1, 2, 0, 3]);
        // One device: plan order, as without --devices.
        assert_eq!(hand_out_order(&weights, 1), vec![0, 1, 2, 3, 4]);
        assert!(hand_out_order(&[], 3).is_empty());
    }

    /// Progress of item `item` at step `step`.
    fn at(device: usize, item: usize, step: u64) -> GroupProgress {
        GroupProgress {
            device,
            group: item,
            groups: 5,
            train: TrainProgress {
                step,
                total: 1,
                phase: crate::ntc::train::schedule::Phase::Main,
                loss: 0.0,
                psnr_estimate: 0.0,
                texels_per_second: 0.0,
                train_workgroups: None,
                latent_adam: crate::ntc::train::gpu::LatentAdam::Dense,
                kernel_ms: None,
            },
        }
    }

    #[test]
    fn free_workers_take_the_next_item_and_every_item_runs_once() {
        use std::sync::Mutex;
        let weights = [1, 5, 3, 4, 2];
        let started = Mutex::new(Vec::new());
        let cancel = AtomicBool::new(false);
        let mut heard = Vec::new();
        let results = run_on_devices(
            &["a", "b"],
            &weights,
            &cancel,
            &|device, name: &&str, item, _stop, report| {
                started.lock().unwrap().push(item);
                report(at(device, item, 1));
                // The largest item holds its device while the other device takes the rest.
                if item == 1 {
                    std::thread::sleep(Duration::from_millis(300));
                }
                Ok::<_, ()>(format!("{name}{item}"))
            },
            &mut |p| heard.push((p.group, p.device)),
        );
        let mut started = started.into_inner().unwrap();
        started.sort_unstable();
        assert_eq!(started, vec![0, 1, 2, 3, 4]);
        let name = |item: usize| match &results[item] {
            Some(Ok(s)) => s[..1].to_string(),
            other => panic!("item {item}: {other:?}"),
        };
        let (busy, free) = (name(1), if name(1) == "a" { "b" } else { "a" });
        for item in [0, 2, 3, 4] {
            assert_eq!(name(item), free, "{results:?}");
        }
        heard.sort_unstable();
        let device = |n: &str| usize::from(n == "b");
        let expect: Vec<(usize, usize)> = (0..5)
            .map(|i| (i, if i == 1 { device(&busy) } else { device(free) }))
            .collect();
        assert_eq!(heard, expect);
    }

    #[test]
    fn a_failure_or_cancel_stops_every_worker() {
        let cancel = AtomicBool::new(false);
        let second_started = AtomicBool::new(false);
        let results = run_on_devices(
            &[(), ()],
            &[9, 8, 7, 6, 5, 4],
            &cancel,
            &|_, _, item, stop, _| {
                if item == 0 {
                    while !second_started.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    return Err(item);
                }
                second_started.store(true, Ordering::Relaxed);
                // The other worker's item runs until the stop flag is set.
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(item)
            },
            &mut |_| {},
        );
        assert_eq!(results[0], Some(Err(0)));
        assert_eq!(results[1], Some(Ok(1)));
        assert!(results[2..].iter().all(Option::is_none), "{results:?}");
        // Cancelled before the start: nothing runs.
        cancel.store(true, Ordering::Relaxed);
        let job =
            |_: usize, _: &(), i: usize, _: &AtomicBool, _: &dyn Fn(GroupProgress)| Ok::<_, ()>(i);
        let results = run_on_devices(&[()], &[1, 2], &cancel, &job, &mut |_| {});
        assert!(results.iter().all(Option::is_none));
    }
}
