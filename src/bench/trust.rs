//! When a benchmark's frame times can be trusted, shared by `bench` and `bench decode`:
//! a configuration warms up until its frame times settle (never less than a minimum time,
//! since a GPU that idled lowers its clocks and ramps back over hundreds of milliseconds),
//! is measured, is measured once more when its p90/p10 exceeds [`STABLE_RATIO`], and is
//! flagged unstable in every output if it still does. Pure functions on sample vectors,
//! so the rules are tested without a GPU.

use std::time::Duration;

use crate::bench::Spread;

/// The least warm-up of a configuration: an idle GPU ramps its clocks back over hundreds
/// of milliseconds.
pub const MIN_WARMUP: Duration = Duration::from_millis(300);

/// How long a configuration warms up before it is measured: untimed frames until there
/// were at least `frames` of them and `time` has passed, and the frame times settled
/// ([`warm_enough`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Warmup {
    /// Least untimed frames.
    pub frames: u32,
    /// Least warm-up time ([`MIN_WARMUP`] unless a test shortens it): a GPU that idled
    /// while the host built the case's frame (or checked the previous one) lowers its
    /// clocks, and a few frames of a small case do not bring them back (on an H200 the
    /// first case of a size ran 2–5× slower after 3 warm-up frames).
    pub time: Duration,
}
/// The largest p90/p10 of a measurement that counts as stable.
pub const STABLE_RATIO: f64 = 1.25;
/// Warm-up frames compared at a time: warm-up ends when the last window is stable and its
/// median is within [`SETTLED`] of the window before it.
pub const WINDOW: usize = 5;
/// Relative change of the window median that counts as settled.
pub const SETTLED: f64 = 0.05;
/// Warm-up never runs longer than this many times its minimum time (a configuration
/// that never settles is then measured, and flagged if unstable).
pub const MAX_WARMUP_FACTOR: u32 = 10;

/// p90 / p10 of `spread` (infinite when p10 is not positive).
pub fn spread_ratio(spread: &Spread) -> f64 {
    if spread.p10 > 0.0 {
        spread.p90 / spread.p10
    } else {
        f64::INFINITY
    }
}

/// Whether `samples` (frame times) are stable: some, with p90/p10 ≤ [`STABLE_RATIO`].
pub fn is_stable(samples: &[f64]) -> bool {
    !samples.is_empty() && spread_ratio(&Spread::of(samples)) <= STABLE_RATIO
}

/// Whether a warm-up that has timed the frames `times` over `elapsed` may end: at least
/// `min_frames` frames and `min_time`, and the last [`WINDOW`] frames stable with a median
/// within [`SETTLED`] of the [`WINDOW`] before them; or `min_time` ·
/// [`MAX_WARMUP_FACTOR`] passed (never settling is reported by the measurement's flag).
pub fn warm_enough(times: &[f64], elapsed: Duration, min_frames: u32, min_time: Duration) -> bool {
    if times.len() < min_frames as usize || elapsed < min_time {
        return false;
    }
    if elapsed >= min_time * MAX_WARMUP_FACTOR {
        return true;
    }
    if times.len() < 2 * WINDOW {
        return false;
    }
    let last = &times[times.len() - WINDOW..];
    let before = &times[times.len() - 2 * WINDOW..times.len() - WINDOW];
    let (a, b) = (Spread::of(before).median, Spread::of(last).median);
    is_stable(last) && (b - a).abs() <= SETTLED * a
}

/// Run untimed frames (`frame` returns each one's time) until [`warm_enough`] says the
/// `warmup` may end.
fn warm_up<E>(warmup: Warmup, mut frame: impl FnMut() -> Result<f64, E>) -> Result<(), E> {
    let start = std::time::Instant::now();
    let mut times = Vec::new();
    while !warm_enough(&times, start.elapsed(), warmup.frames, warmup.time) {
        times.push(frame()?);
    }
    Ok(())
}

/// A measurement after the trust rules: the samples kept, whether they were measured
/// twice, and whether they are still unstable.
#[derive(Clone, Debug, PartialEq)]
pub struct Trusted<T> {
    /// The samples whose spread is reported (the second measurement's when re-measured).
    pub samples: Vec<T>,
    /// Whether the first measurement was unstable and replaced.
    pub remeasured: bool,
    /// Whether the kept samples are unstable (p90/p10 > [`STABLE_RATIO`]).
    pub unstable: bool,
}

/// Measure with `measure` (which returns samples and the frame time of each), once more
/// when the first measurement is unstable; the second replaces the first.
fn measure_trusted<T, E>(
    mut measure: impl FnMut() -> Result<Vec<T>, E>,
    time: impl Fn(&T) -> f64,
) -> Result<Trusted<T>, E> {
    let times = |s: &[T]| s.iter().map(&time).collect::<Vec<f64>>();
    let first = measure()?;
    if is_stable(&times(&first)) {
        return Ok(Trusted {
            samples: first,
            remeasured: false,
            unstable: false,
        });
    }
    let second = measure()?;
    let unstable = !is_stable(&times(&second));
    Ok(Trusted {
        samples: second,
        remeasured: true,
        unstable,
    })
}

/// The whole protocol of a timed measurement: `warmup` on frame 0, then time frames
/// `0..frames` under `measure_trusted`. `frame(i)` renders frame `i` and returns its
/// sample, `time` the sample's frame time.
pub fn run<T, E>(
    warmup: Warmup,
    frames: usize,
    mut frame: impl FnMut(usize) -> Result<T, E>,
    time: impl Fn(&T) -> f64,
) -> Result<Trusted<T>, E> {
    warm_up(warmup, || frame(0).map(|s| time(&s)))?;
    measure_trusted(|| (0..frames).map(&mut frame).collect(), time)
}

/// `median (p10–p90)`, with ` UNSTABLE` when flagged: the cell every Markdown table uses.
pub fn spread_cell(spread: &Spread, unstable: bool) -> String {
    format!(
        "{:.3} ({:.3}–{:.3}){}",
        spread.median,
        spread.p10,
        spread.p90,
        if unstable { " UNSTABLE" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three warm-up frames and no least time.
    const LEAST_FRAMES: Warmup = Warmup {
        frames: 3,
        time: Duration::ZERO,
    };

    #[test]
    fn stability_is_p90_over_p10() {
        assert!(is_stable(&[1.0; 10]));
        assert!(is_stable(&[
            1.0, 1.1, 1.2, 1.0, 1.05, 1.1, 1.2, 1.0, 1.1, 1.24
        ]));
        // p90 = 1.3 over p10 = 1.0.
        assert!(!is_stable(&[
            1.0, 1.0, 1.1, 1.1, 1.2, 1.2, 1.2, 1.3, 1.3, 1.3
        ]));
        assert!(!is_stable(&[]));
        assert!(!is_stable(&[0.0, 0.0]));
    }

    #[test]
    fn warm_up_waits_for_the_minimum_then_for_settled_frames() {
        let min = Duration::from_millis(300);
        let flat = [1.0; 12];
        // Too early, too few frames.
        assert!(!warm_enough(&flat, Duration::from_millis(299), 3, min));
        assert!(!warm_enough(&flat[..2], min, 3, min));
        assert!(warm_enough(&flat, min, 3, min));
        // Clocks still ramping: 4× slow frames, then the last window fast.
        let ramp = [4.0, 4.0, 4.0, 4.0, 4.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        assert!(!warm_enough(&ramp, min, 3, min));
        let settled = [ramp.as_slice(), &[1.0; 5]].concat();
        assert!(warm_enough(&settled, min, 3, min));
        // Never settling: stops at the cap.
        let noisy = [1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0];
        assert!(!warm_enough(&noisy, min * 9, 3, min));
        assert!(warm_enough(&noisy, min * MAX_WARMUP_FACTOR, 3, min));
    }

    #[test]
    fn warm_up_runs_frames_until_warm_enough_and_passes_errors_on() {
        // No minimum time: the time cap is reached at once, so the least frames end it.
        let mut frames = 0;
        warm_up(LEAST_FRAMES, || {
            frames += 1;
            Ok::<_, ()>(if frames % 2 == 0 { 4.0 } else { 1.0 })
        })
        .unwrap();
        assert_eq!(frames, 3);
        assert_eq!(warm_up(LEAST_FRAMES, || Err::<f64, _>("lost")), Err("lost"));
    }

    #[test]
    fn an_unstable_measurement_is_repeated_once_and_flagged() {
        let mut calls = 0;
        let stable = measure_trusted(
            || {
                calls += 1;
                Ok::<_, ()>(vec![1.0; 10])
            },
            |t| *t,
        )
        .unwrap();
        assert_eq!(
            (calls, stable.remeasured, stable.unstable),
            (1, false, false)
        );

        let mut runs = vec![vec![1.0; 10], vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0]].into_iter();
        let recovered = measure_trusted(|| Ok::<_, ()>(runs.next_back().unwrap()), |t| *t).unwrap();
        assert_eq!((recovered.remeasured, recovered.unstable), (true, false));
        assert_eq!(recovered.samples, vec![1.0; 10]);

        let still = measure_trusted(|| Ok::<_, ()>(vec![1.0, 3.0, 1.0, 3.0]), |t| *t).unwrap();
        assert_eq!((still.remeasured, still.unstable), (true, true));
        assert!(spread_cell(&Spread::of(&still.samples), still.unstable).ends_with(" UNSTABLE"));
        assert_eq!(
            spread_cell(&Spread::of(&[2.0]), false),
            "2.000 (2.000–2.000)"
        );
    }

    #[test]
    fn run_warms_up_on_the_first_frame_then_times_every_frame_in_order() {
        let mut calls = Vec::new();
        let trusted = run(
            LEAST_FRAMES,
            4,
            |i| {
                calls.push(i);
                Ok::<_, ()>((i, 1.0))
            },
            |s| s.1,
        )
        .unwrap();
        assert_eq!(calls, vec![0, 0, 0, 0, 1, 2, 3]);
        assert_eq!(
            trusted.samples.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        assert!(!trusted.remeasured);
        assert_eq!(
            run(LEAST_FRAMES, 4, |_| Err::<(usize, f64), _>("lost"), |s| s.1),
            Err("lost")
        );
    }
}
