//! A path that goes silent (its emulated link drops everything from t = 1 s on) is detected by
//! the missing acknowledgements, suspected and then marked down, and its unacknowledged data
//! is re-sent on the other path: the transfer completes intact. Both paths cross the loopback link emulator of
//! `mpquic-netns` (no root).

mod common;

use std::time::Duration;

use common::relayed::relayed_pair;
use common::*;
use mpquic_core::{Config, PathConfig, PathEvent, PathId, PathStatus};
use mpquic_scenario::events::TimedEvent;
use mpquic_scenario::link::LinkConfig;

fn link(events: &[&str]) -> LinkConfig {
    let mut link = LinkConfig::new(100_000_000, Duration::from_millis(5));
    link.events = events
        .iter()
        .map(|e| TimedEvent::parse(e).unwrap())
        .collect();
    link
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_path_is_detected_and_its_data_resent() {
    let pair = relayed_pair(
        Config::default(),
        vec![
            (link(&[]), link(&[])),
            (link(&["1s down"]), link(&["1s down"])),
        ],
    )
    .await;
    let (client, server) = (pair.client.clone(), pair.server.clone());
    serve_hashes(server);
    let mut events = client.path_events();
    let second = client
        .open_path(&PathConfig::new(local(2), pair.fronts[1]))
        .await
        .unwrap();

    // 40 MB at 2 x 100 Mbit/s takes about 1.6 s: path 2 dies in the middle.
    let send = tokio::time::timeout(
        Duration::from_secs(60),
        send_and_check(&client, 3, 40_000_000),
    )
    .await
    .expect("the transfer completes on the remaining path");

    let down = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let PathEvent::Down { path, reason } = events.next().await.unwrap().unwrap() {
                return (path, reason);
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(down, (second, "no acknowledgement progress".to_owned()));
    assert_eq!(client.paths()[1].status, PathStatus::Down);
    assert!(send.path_bytes()[&PathId(0)] > 20_000_000);
    assert!(
        send.resent_bytes() + send.reinjected_bytes() > 0,
        "bytes stranded on path 2 were re-sent"
    );
}
