//! An urgent stream opened just after a bulk stream's first window overtakes what quinn has
//! not sent of it: PriorityBucket grants it past the full window, and the driver queues each
//! new chunk stream in quinn at its own priority. One path crosses the loopback link emulator
//! of `mpquic-netns` (10 Mbit/s, 50 ms each way; no root).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::relayed::relayed_pair;
use common::*;
use mpquic_core::{Config, Priority, SchedulerKind, Urgency};
use mpquic_scenario::link::LinkConfig;

const BULK: usize = 200_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_urgent_stream_overtakes_a_bulk_streams_backlog() {
    let mut config = Config::default();
    config.scheduler(SchedulerKind::PriorityBucket);
    // 50 ms each way: quinn paces a window out over about one RTT, so the bulk's first
    // window is still mostly in quinn when the urgent stream comes.
    let link = LinkConfig::new(10_000_000, Duration::from_millis(50));
    let pair = relayed_pair(config, vec![(link.clone(), link)]).await;
    let (client, server) = (pair.client.clone(), pair.server.clone());

    // The server counts the bulk bytes that have arrived when the urgent stream is complete.
    let bulk_read = Arc::new(AtomicUsize::new(0));
    let reader = {
        let bulk_read = bulk_read.clone();
        tokio::spawn(async move {
            let mut bulk = server.accept_uni().await.unwrap();
            let counter = bulk_read.clone();
            let bulk_task = tokio::spawn(async move {
                let mut buf = vec![0; 64 * 1024];
                while let Some(n) = bulk.read(&mut buf).await.unwrap() {
                    counter.fetch_add(n, Ordering::SeqCst);
                }
            });
            let mut urgent = server.accept_uni().await.unwrap();
            let urgent_bytes = urgent.read_to_end(1 << 20).await.unwrap();
            let at_urgent_end = bulk_read.load(Ordering::SeqCst);
            bulk_task.await.unwrap();
            (urgent_bytes.len(), at_urgent_end)
        })
    };

    let mut bulk = client.open_uni().await.unwrap();
    bulk.set_priority(Priority::new(Urgency::new(6).unwrap(), false))
        .unwrap();
    bulk.write_all(&payload(1, BULK)).await.unwrap();
    // The urgent stream comes once the bulk's first window is granted (the path was idle: all
    // of it at once, one chunk) and quinn is pacing it out.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut urgent = client.open_uni().await.unwrap();
    urgent
        .set_priority(Priority::new(Urgency::HIGHEST, false))
        .unwrap();
    urgent.write_all(&payload(2, 1_000)).await.unwrap();
    urgent.finish().unwrap();
    bulk.finish().unwrap();

    let (urgent_len, bulk_at_urgent_end) = tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("both streams arrive")
        .unwrap();
    assert_eq!(urgent_len, 1_000);
    assert_eq!(bulk_read.load(Ordering::SeqCst), BULK);
    // The receiver reads the bulk's first window whole (one chunk): the urgent stream ends
    // before it. Queued at priority 0 as quinn's new streams were, it came after it.
    assert_eq!(
        bulk_at_urgent_end, 0,
        "the urgent stream ended after {bulk_at_urgent_end} bulk bytes"
    );
    pair.relay.stop();
}
