//! Transfers on loopback with distinct 127.0.0.x addresses per path: every byte checked by
//! sha256 on the receiving side. The quinn driver's smoke tests; every scheduler over one, two
//! and four paths, and streams of every size, run on the simulation (`tests/sim.rs`).

mod common;

use std::time::Duration;

use common::*;
use mpquic_core::{PathConfig, PathId, PathStatus};

const TIMEOUT: Duration = Duration::from_secs(120);

async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(TIMEOUT, f)
        .await
        .expect("finished in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabytes_over_two_paths() {
    let pair = pair(2, "priority-bucket").await;
    serve_hashes(pair.server.clone());
    let send = bounded(send_and_check(&pair.client, 7, 100 << 20)).await;
    let per_path = send.path_bytes();
    assert!(per_path.values().sum::<u64>() >= 100 << 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_streams() {
    thousand_concurrent_streams(2).await;
}

/// A path starts with room for 128 chunk streams and raises it as the peer opens more
/// (`crates/mpquic-core/src/chunk_limit.rs`): with one path, a raise that did not come would
/// leave the sender waiting for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_streams_on_one_path() {
    thousand_concurrent_streams(1).await;
}

async fn thousand_concurrent_streams(paths: usize) {
    let pair = pair(paths, "priority-bucket").await;
    serve_hashes(pair.server.clone());
    let streams: Vec<_> = (0..1000u64)
        .map(|i| {
            let client = pair.client.clone();
            tokio::spawn(async move {
                send_and_check(&client, i, 1000 + (i as usize * 37) % 9000).await
            })
        })
        .collect();
    for s in streams {
        bounded(s).await.unwrap();
    }
}

/// Starts a `len`-byte stream and returns once the server has received `after` bytes of it.
async fn transfer_in_background(
    pair: &Pair,
    len: usize,
) -> tokio::task::JoinHandle<mpquic_core::SendStream> {
    let client = pair.client.clone();
    tokio::spawn(async move { send_and_check(&client, 99, len).await })
}

async fn wait_received(pair: &Pair, bytes: u64) {
    bounded(async {
        while pair
            .server
            .paths()
            .iter()
            .map(|p| p.bytes_received)
            .sum::<u64>()
            < bytes
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_closed_mid_transfer_leaves_the_rest_to_the_others() {
    let pair = pair(2, "priority-bucket").await;
    serve_hashes(pair.server.clone());
    let transfer = transfer_in_background(&pair, 50 << 20).await;
    wait_received(&pair, 10 << 20).await;
    pair.client.close_path(PathId(1)).unwrap();
    let send = bounded(transfer).await.unwrap();
    let paths = pair.client.paths();
    assert_eq!(paths[1].status, PathStatus::Down);
    assert!(paths[0].status == PathStatus::Available);
    // The stream finished intact (checked by send_and_check) with path 0 carrying the rest.
    assert!(send.path_bytes()[&PathId(0)] > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_added_mid_transfer_carries_data() {
    let pair = pair(1, "priority-bucket").await;
    serve_hashes(pair.server.clone());
    let transfer = transfer_in_background(&pair, 40 << 20).await;
    wait_received(&pair, 4 << 20).await;
    let added = pair
        .client
        .open_path(&PathConfig::new(local(2), pair.server_addr))
        .await
        .unwrap();
    let send = bounded(transfer).await.unwrap();
    let on_new = send.path_bytes().get(&added).copied().unwrap_or(0);
    assert!(
        on_new > 0,
        "the new path carried {on_new} bytes of the stream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fld_carries_a_transfer_and_paths_take_their_own_controller() {
    let mut config = mpquic_core::Config::default();
    config.congestion_control("fld".parse().unwrap());
    let pair = pair_with(1, config).await;
    serve_hashes(pair.server.clone());
    let mut second = PathConfig::new(local(2), pair.server_addr);
    second.congestion_control(mpquic_core::CongestionControl::NewReno);
    pair.client.open_path(&second).await.unwrap();
    let send = bounded(send_and_check(&pair.client, 11, 5 << 20)).await;
    assert_eq!(send.path_bytes().len(), 2, "both paths carried the stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cubic_with_hystart_carries_a_transfer_on_two_paths() {
    let mut config = mpquic_core::Config::default();
    config.congestion_control("cubic-hystart".parse().unwrap());
    let pair = pair_with(1, config).await;
    serve_hashes(pair.server.clone());
    pair.client
        .open_path(&PathConfig::new(local(2), pair.server_addr))
        .await
        .unwrap();
    let send = bounded(send_and_check(&pair.client, 12, 5 << 20)).await;
    assert_eq!(send.path_bytes().len(), 2, "both paths carried the stream");
}

/// An endpoint with a server configuration and a default client configuration accepts and
/// connects: two such peers each open a session to the other, over two paths, and each serves
/// the other's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_serves_also_connects() {
    let certificate = mpquic_core::SelfSigned::new(&["localhost"]).unwrap();
    let peer = |k: usize| {
        let mut endpoint =
            mpquic_core::Endpoint::new(&[local(k)], Some(certificate.server_config().unwrap()))
                .unwrap();
        endpoint.set_default_client_config(certificate.client_config().unwrap());
        endpoint
    };
    let (a, b) = (peer(1), peer(2));
    for (from, to, second) in [(&a, &b, 3), (&b, &a, 4)] {
        let to_addr = to.local_addr().unwrap();
        let (conn, accepted) = connect_and_accept(from, to, to_addr).await;
        conn.open_path(&PathConfig::new(local(second), to_addr))
            .await
            .unwrap();
        serve_hashes(accepted);
        let send = bounded(send_and_check(&conn, 5, 1 << 20)).await;
        assert!(send.path_bytes().values().sum::<u64>() >= 1 << 20);
    }
}

/// With stateless retries, every path (the session's first and a joined one) still comes up
/// and carries its share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_come_up_through_a_stateless_retry() {
    let certificate = mpquic_core::SelfSigned::new(&["localhost"]).unwrap();
    let mut server_config = certificate.server_config().unwrap();
    server_config.retry_unvalidated(true);
    let server = mpquic_core::Endpoint::server(server_config, local(1)).unwrap();
    let server_addr = server.local_addr().unwrap();
    let mut client = mpquic_core::Endpoint::client(local(1)).unwrap();
    client.set_default_client_config(certificate.client_config().unwrap());
    let (conn, server_conn) = connect_and_accept(&client, &server, server_addr).await;
    conn.open_path(&PathConfig::new(local(2), server_addr))
        .await
        .unwrap();
    serve_hashes(server_conn);
    let send = bounded(send_and_check(&conn, 9, 4 << 20)).await;
    assert_eq!(send.path_bytes().len(), 2, "both paths carried the stream");
}

/// The application decides on each attempt at a session before its handshake, as with quinn's
/// `Incoming`: it asks an unproven address to retry, refuses an attempt, and accepts one. The
/// accepted session's second path joins without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_application_retries_refuses_and_accepts_attempts() {
    let certificate = mpquic_core::SelfSigned::new(&["localhost"]).unwrap();
    let server =
        mpquic_core::Endpoint::server(certificate.server_config().unwrap(), local(1)).unwrap();
    let server_addr = server.local_addr().unwrap();
    let mut client = mpquic_core::Endpoint::client(local(1)).unwrap();
    client.set_default_client_config(certificate.client_config().unwrap());

    let (conn, server_conn) = tokio::join!(
        async {
            let connecting = client.connect(server_addr, "localhost").unwrap();
            bounded(connecting).await.unwrap()
        },
        async {
            let first = server.accept().await.unwrap();
            assert!(!first.remote_address_validated());
            first.retry().unwrap();
            let second = server.accept().await.unwrap();
            assert!(second.remote_address_validated());
            assert!(!second.may_retry());
            let again = second.retry().unwrap_err().into_incoming();
            again.await.unwrap()
        },
    );
    conn.open_path(&PathConfig::new(local(2), server_addr))
        .await
        .unwrap();
    serve_hashes(server_conn);
    let send = bounded(send_and_check(&conn, 9, 1 << 20)).await;
    assert_eq!(send.path_bytes().len(), 2, "both paths carried the stream");

    let (refused, ()) = tokio::join!(
        async { bounded(client.connect(server_addr, "localhost").unwrap()).await },
        async { server.accept().await.unwrap().refuse() },
    );
    assert!(
        matches!(
            &refused,
            Err(mpquic_core::PathError::Handshake(quinn::ConnectionError::ConnectionClosed(c)))
                if c.error_code == quinn::TransportErrorCode::CONNECTION_REFUSED
        ),
        "{refused:?}"
    );
}
