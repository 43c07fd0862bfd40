//! PriorityBucket over two loopback paths splits a stream with a size hint in the allocator's
//! proportions, as read back from the stream's per-path byte counts.
//!
//! Loopback estimates move by more than PriorityBucket's drift threshold within one transfer,
//! which re-allocates the unsent rest with the new estimates; to compare against one
//! allocation the test turns re-allocation off, so the split is the one made when the hint
//! arrived, from the estimates the test reads just before.

mod common;

use common::*;
use mpquic_core::Config;
use mpquic_core::PathId;
use mpquic_sched::{allocate, AllocPath, Bandwidth, PriorityBucket, PriorityBucketConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_size_hinted_stream_is_split_in_the_allocators_proportions() {
    let mut config = Config::default();
    config.scheduler_factory("priority-bucket", || {
        let mut pb = PriorityBucketConfig::default();
        pb.drift_threshold(f64::INFINITY);
        Box::new(PriorityBucket::new(pb))
    });
    let pair = pair_with(2, config).await;
    serve_hashes(pair.server.clone());
    // Warm both paths so the estimates are measured, not priors.
    for seed in 0..4 {
        send_and_check(&pair.client, seed, 200_000).await;
    }
    let size = 2_000_000u64;
    let stats = pair.client.paths();
    let paths: Vec<AllocPath> = stats
        .iter()
        .map(|p| AllocPath {
            one_way_delay: p.one_way_delay,
            // PriorityBucket's rate: the estimate capped by what the window carries per RTT.
            bandwidth: Bandwidth::from_bits_per_sec(
                p.bandwidth_bps
                    .min(p.cwnd as f64 * 8.0 / p.srtt.as_secs_f64()),
            )
            .unwrap(),
            queued: 0,
        })
        .collect();
    let mut shares = vec![0; paths.len()];
    allocate(&paths, size, &mut shares).unwrap();

    let data = payload(9, size as usize);
    let (mut send, mut recv) = pair.client.open_bi().await.unwrap();
    send.set_size_hint(size).unwrap();
    send.write_all(&data).await.unwrap();
    send.finish().unwrap();
    assert_eq!(recv.read_to_end(64).await.unwrap(), sha256(&data));

    let sent = send.path_bytes();
    let on = |k| sent.get(&PathId(k)).copied().unwrap_or(0) as f64 / size as f64;
    let want = |k: usize| shares[k] as f64 / size as f64;
    eprintln!("allocator {shares:?}, sent {sent:?}, estimates {stats:?}");
    for k in 0..2 {
        assert!(on(k as u32) > 0.0, "path {k} carried part of the stream");
        assert!(
            (on(k as u32) - want(k)).abs() < 0.02,
            "path {k}: {:.3} of the stream vs the allocator's {:.3}",
            on(k as u32),
            want(k)
        );
    }
}
