//! Repeating simulated page loads over consecutive seeds and summarizing each scheduler's FRT
//! and PLT (mean and sample standard deviation), as the papers report 10 repetitions.

use std::time::Duration;

use mpquic_core::CongestionControl;
use mpquic_replay::sim::{load_simulated_with, HostTime};
use mpquic_replay::{RequestOrder, RunConfig};
use mpquic_scenario::Scenario;
use mpquic_sched::sim::{oracle, OracleBound, SimConfig, SimError};
use mpquic_sched::SchedulerKind;
use serde_json::{json, Map, Value};

use crate::experiment::pages::PageRef;
use crate::stats::Summary;

/// One scheduler over all the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// The scheduler.
    pub kind: SchedulerKind,
    /// Its summaries, or why some run failed.
    pub outcome: Result<Measured, Failed>,
}

/// A scheduler's FRT and PLT over runs that all succeeded, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// First rendering time; `None` when the page has no critical object.
    pub frt: Option<Summary>,
    /// Page load time.
    pub plt: Summary,
}

/// A scheduler that failed in at least one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// How many of the runs failed.
    pub failed_runs: usize,
    /// The first failure, with its seed.
    pub first: String,
}

/// One simulated page load that completed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// The scheduler.
    pub kind: SchedulerKind,
    /// The seed of the load's links and quinn-proto connections.
    pub seed: u64,
    /// First rendering time, ms.
    pub frt_ms: f64,
    /// Page load time, ms.
    pub plt_ms: f64,
    /// Stream bytes the client received twice (re-injected copies).
    pub duplicate_bytes: u64,
}

/// Every scheduler's summaries over `runs` seeds starting at `first_seed`, with the oracle's
/// bounds (which do not depend on the seed).
#[derive(Debug, Clone, PartialEq)]
pub struct Runs {
    /// The first seed; run `i` used `first_seed + i`.
    pub first_seed: u64,
    /// How many runs.
    pub runs: u32,
    /// One row per scheduler, in the order asked.
    pub rows: Vec<RunRow>,
    /// Every load that completed, by seed, then in the order of the schedulers asked: the
    /// tails that a mean and a standard deviation hide.
    pub loads: Vec<Load>,
    /// The lower bounds.
    pub oracle: OracleBound,
}

impl Runs {
    /// The last seed used.
    pub fn last_seed(&self) -> u64 {
        self.first_seed + u64::from(self.runs.max(1) - 1)
    }
}

fn millis(value: Duration) -> f64 {
    value.as_secs_f64() * 1e3
}

/// What one scheduler collected over the runs.
#[derive(Default)]
struct Samples {
    frt: Vec<Option<f64>>,
    plt: Vec<f64>,
    failures: Vec<(u64, String)>,
}

impl Samples {
    fn finish(self) -> Result<Measured, Failed> {
        if let Some((seed, error)) = self.failures.first() {
            return Err(Failed {
                failed_runs: self.failures.len(),
                first: format!("seed {seed}: {error}"),
            });
        }
        // The page decides whether there is a critical object, so FRT is there in every run
        // or in none.
        let frt: Option<Vec<f64>> = self.frt.into_iter().collect();
        let frt = frt.and_then(|v| Summary::of(&v));
        let plt = Summary::of(&self.plt).ok_or_else(|| Failed {
            failed_runs: 0,
            first: "no page load time measured".to_owned(),
        })?;
        Ok(Measured { frt, plt })
    }
}

/// How the simulated loads of [`run`] are made, besides the scheduler and the seed.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Recorded gaps between requests scaled by this (0: each request when its initiator
    /// arrived).
    pub time_scale: f64,
    /// When the objects are requested.
    pub request_order: RequestOrder,
    /// Both ends re-inject (mpquic's default); without, as mp-quic's schedulers ran.
    pub reinjection: bool,
    /// Every path's congestion controller.
    pub cc: CongestionControl,
    /// The time the hosts take per round of requests.
    pub host: HostTime,
}

/// Loads `page` over `scenario` on the full-stack simulation ([`load_simulated_with`]: the real
/// core, quinn-proto and scheduler on simulated time) with each scheduler of `kinds`, `runs`
/// times over the seeds from `first_seed`, as `options` say; and the fluid oracle's bounds.
///
/// # Errors
/// The oracle's [`SimError`] (a page or scenario it cannot model).
pub fn run(
    page: &PageRef,
    scenario: &'static Scenario,
    kinds: &[SchedulerKind],
    first_seed: u64,
    runs: u32,
    options: &LoadOptions,
) -> Result<Runs, SimError> {
    let oracle = oracle(
        &SimConfig::from_scenario(scenario),
        &page.sim_page(options.time_scale, options.request_order),
    )?;
    let mut samples: Vec<Samples> = kinds.iter().map(|_| Samples::default()).collect();
    let mut loads = Vec::new();
    for i in 0..u64::from(runs.max(1)) {
        let seed = first_seed.wrapping_add(i);
        for (kind, sample) in kinds.iter().zip(&mut samples) {
            let load = RunConfig::new(kind.name(), scenario.name).and_then(|mut run| {
                run.load.time_scale = options.time_scale;
                run.load.request_order = options.request_order;
                run.reinjection = options.reinjection;
                run.congestion = options.cc.clone();
                load_simulated_with(&page.page, &run, seed, options.host)
            });
            match load {
                Ok(report) => {
                    sample.frt.push(Some(report.frt_ms));
                    sample.plt.push(report.plt_ms);
                    loads.push(Load {
                        kind: *kind,
                        seed,
                        frt_ms: report.frt_ms,
                        plt_ms: report.plt_ms,
                        duplicate_bytes: report.duplicate_bytes,
                    });
                }
                Err(e) => sample.failures.push((seed, e.to_string())),
            }
        }
    }
    let rows = kinds
        .iter()
        .zip(samples)
        .map(|(&kind, sample)| RunRow {
            kind,
            outcome: sample.finish(),
        })
        .collect();
    Ok(Runs {
        first_seed,
        runs: runs.max(1),
        rows,
        loads,
        oracle,
    })
}

/// The loads as CSV, one line each: `scheduler,seed,frt_ms,plt_ms,duplicate_bytes`.
pub fn loads_csv(runs: &Runs) -> String {
    let mut out = String::from("scheduler,seed,frt_ms,plt_ms,duplicate_bytes\n");
    for load in &runs.loads {
        out.push_str(&format!(
            "{},{},{:.3},{:.3},{}\n",
            load.kind.name(),
            load.seed,
            load.frt_ms,
            load.plt_ms,
            load.duplicate_bytes
        ));
    }
    out
}

/// Milliseconds rounded to the microsecond, the simulator's useful precision.
fn rounded(ms: f64) -> Value {
    json!((ms * 1e3).round() / 1e3)
}

fn optional(ms: Option<f64>) -> Value {
    ms.map_or(Value::Null, rounded)
}

/// One JSON object keyed by scheduler name: each `{"frt_ms", "plt_ms"}` (the means, as a single
/// run reported them before), `"frt_sd_ms"`, `"plt_sd_ms"` and `"runs"`; a scheduler that failed
/// has nulls, `"failed_runs"` and `"error"`. `"oracle"` holds `{"frt_ms", "plt_ms"}`.
pub fn to_json(runs: &Runs) -> Value {
    let mut object = Map::new();
    for row in &runs.rows {
        let value = match &row.outcome {
            Ok(m) => json!({
                "frt_ms": optional(m.frt.map(|s| s.mean)),
                "plt_ms": rounded(m.plt.mean),
                "frt_sd_ms": optional(m.frt.map(|s| s.sd)),
                "plt_sd_ms": rounded(m.plt.sd),
                "runs": runs.runs,
            }),
            Err(f) => json!({
                "frt_ms": null,
                "plt_ms": null,
                "frt_sd_ms": null,
                "plt_sd_ms": null,
                "runs": runs.runs,
                "failed_runs": f.failed_runs,
                "error": f.first,
            }),
        };
        object.insert(row.kind.name().to_owned(), value);
    }
    object.insert(
        "oracle".to_owned(),
        json!({
            "frt_ms": optional(runs.oracle.frt.map(millis)),
            "plt_ms": rounded(millis(runs.oracle.plt)),
        }),
    );
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_reinjection() -> LoadOptions {
        LoadOptions {
            time_scale: 0.0,
            request_order: RequestOrder::Discovered,
            reinjection: true,
            cc: CongestionControl::default(),
            host: HostTime::TESTBED,
        }
    }

    fn page(name: &str) -> PageRef {
        let root = crate::workspace_root();
        let scratch = std::env::temp_dir();
        let mut pages = crate::experiment::pages::resolve(&[name.into()], &root, &scratch);
        pages.as_mut().unwrap().remove(0)
    }

    fn youtube() -> PageRef {
        page("youtube-2013")
    }

    #[test]
    fn runs_repeat_exactly_and_average_over_the_seeds() {
        let page = youtube();
        let scenario = Scenario::by_name("pb-high-lossy").unwrap();
        let kinds = [SchedulerKind::Lrf, SchedulerKind::PriorityBucket];
        let runs = run(&page, scenario, &kinds, 7, 2, &with_reinjection()).unwrap();
        assert_eq!((runs.first_seed, runs.last_seed()), (7, 8));
        assert_eq!(
            runs,
            run(&page, scenario, &kinds, 7, 2, &with_reinjection()).unwrap()
        );
        let mut plt = Vec::new();
        for seed in [7, 8] {
            let mut one = RunConfig::new("lrf", "pb-high-lossy").unwrap();
            one.load.time_scale = 0.0;
            let load = load_simulated_with(&page.page, &one, seed, HostTime::TESTBED);
            plt.push(load.unwrap().plt_ms);
        }
        let lrf = runs.rows[0].outcome.as_ref().unwrap();
        assert_eq!(lrf.plt, Summary::of(&plt).unwrap());
        // Each load is listed, by seed and then scheduler, with the same figures.
        let listed: Vec<(SchedulerKind, u64)> =
            runs.loads.iter().map(|l| (l.kind, l.seed)).collect();
        assert_eq!(
            listed,
            [
                (SchedulerKind::Lrf, 7),
                (SchedulerKind::PriorityBucket, 7),
                (SchedulerKind::Lrf, 8),
                (SchedulerKind::PriorityBucket, 8)
            ]
        );
        assert_eq!([runs.loads[0].plt_ms, runs.loads[2].plt_ms], plt[..]);
        let csv = loads_csv(&runs);
        assert_eq!(csv.lines().count(), 5);
        assert!(csv.starts_with("scheduler,seed,frt_ms,plt_ms,duplicate_bytes\nlrf,7,"));
    }

    #[test]
    fn without_reinjection_nothing_arrives_twice() {
        // Seeds 2 and 3 of pb-high-lossy lose packets of google.com-2021's urgent streams,
        // which priority-bucket re-injects.
        let google = page("google.com-2021");
        let scenario = Scenario::by_name("pb-high-lossy").unwrap();
        let kinds = [SchedulerKind::PriorityBucket];
        let with = run(&google, scenario, &kinds, 2, 2, &with_reinjection()).unwrap();
        let without = LoadOptions {
            reinjection: false,
            ..with_reinjection()
        };
        let without = run(&google, scenario, &kinds, 2, 2, &without).unwrap();
        assert!(with.loads.iter().any(|l| l.duplicate_bytes > 0));
        assert!(without.loads.iter().all(|l| l.duplicate_bytes == 0));
    }

    #[test]
    fn json_keeps_the_single_run_keys() {
        let scenario = Scenario::by_name("pb-high").unwrap();
        let runs = run(
            &youtube(),
            scenario,
            &SchedulerKind::ALL,
            1,
            1,
            &with_reinjection(),
        )
        .unwrap();
        let json = to_json(&runs);
        let object = json.as_object().unwrap();
        assert_eq!(object.len(), SchedulerKind::ALL.len() + 1);
        for kind in SchedulerKind::ALL {
            let entry = &object[kind.name()];
            for key in ["frt_ms", "plt_ms", "frt_sd_ms", "plt_sd_ms", "runs"] {
                assert!(entry.get(key).is_some(), "{}: no {key}", kind.name());
            }
        }
        assert!(object["oracle"]["frt_ms"].is_number());
        assert!(object["oracle"]["plt_ms"].is_number());
    }

    #[test]
    fn failures_carry_their_seed_and_count() {
        let mut sample = Samples::default();
        sample.plt.push(1.0);
        sample.frt.push(Some(1.0));
        for seed in [4, 6] {
            sample.failures.push((seed, "boom".to_owned()));
        }
        let failed = sample.finish().unwrap_err();
        assert_eq!(failed.failed_runs, 2);
        assert!(failed.first.starts_with("seed 4: "), "{}", failed.first);
        assert!(failed.first.contains("boom"));
    }
}
