//! The PriorityBucket allocator against the straight-line two-path solution of the same problem.
//!
//! `cargo bench --bench allocator`: group `allocator`, ids `priority_bucket/N` for N paths and
//! `closed_form_2`, all in one run so their ratio is measured side by side.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mpquic::sched::{allocate, allocate_two, AllocPath, Bandwidth, MAX_PATHS};

/// N paths with spread delays, rates and queues, so every step of the algorithm runs: the
/// sort has work, several gaps are filled and a remainder is spread.
fn paths(n: usize) -> Vec<AllocPath> {
    (0..n)
        .map(|i| {
            let i = i as u64;
            AllocPath {
                one_way_delay: Duration::from_micros(5_000 + (i * 7_919) % 45_000),
                bandwidth: Bandwidth::from_bits_per_sec(((i * 31) % 40 + 5) as f64 * 1e6)
                    .expect("positive rate"),
                queued: (i * 104_729) % 200_000,
            }
        })
        .collect()
}

/// A stream large enough to reach every path (a 1 MB object).
const SIZE: u64 = 1_000_000;

fn allocator(c: &mut Criterion) {
    let mut group = c.benchmark_group("allocator");
    for n in [2, 4, 8, 16, 32] {
        let input = paths(n);
        let mut out = [0_u64; MAX_PATHS];
        group.bench_with_input(
            BenchmarkId::new("priority_bucket", n),
            &input,
            |b, input| {
                b.iter(|| allocate(black_box(input), black_box(SIZE), &mut out).map(|a| a.finish))
            },
        );
    }
    let two = paths(2);
    group.bench_function("closed_form_2", |b| {
        b.iter(|| allocate_two(black_box(&two[0]), black_box(&two[1]), black_box(SIZE)))
    });
    group.finish();
}

criterion_group!(benches, allocator);
criterion_main!(benches);
