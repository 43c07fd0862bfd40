//! How streams end through the quinn driver's handles: reset by the sender, stop-sending by
//! the receiver, and connection close, each reaching the other side's API with its code. (The
//! core's side of stream ends runs on simulated time in `sim.rs`.)

mod common;

use std::time::Duration;

use common::*;
use mpquic_core::{ConnectionError, ReadError, VarInt, WriteError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_reaches_the_reader_with_its_code() {
    let pair = pair(2, "lrf").await;
    let mut send = pair.client.open_uni().await.unwrap();
    send.write_all(b"partial").await.unwrap();
    let mut recv = pair.server.accept_uni().await.unwrap();
    send.reset(VarInt::from_u32(7)).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), recv.read_to_end(1 << 20))
        .await
        .unwrap();
    assert_eq!(result.unwrap_err(), ReadError::Reset(7).into());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_sending_fails_the_writer_with_its_code() {
    let pair = pair(2, "priority-bucket").await;
    let mut send = pair.client.open_uni().await.unwrap();
    send.write_all(b"first").await.unwrap();
    let mut recv = pair.server.accept_uni().await.unwrap();
    recv.stop(VarInt::from_u32(9)).unwrap();
    let data = payload(1, 64 * 1024);
    let error = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Err(e) = send.write_all(&data).await {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(error, WriteError::Stopped(9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_connection_reaches_the_peer_with_its_code() {
    let pair = pair(2, "priority-bucket").await;
    pair.client.close(VarInt::from_u32(42), b"bye");
    let seen = tokio::time::timeout(Duration::from_secs(10), pair.server.closed())
        .await
        .unwrap();
    assert_eq!(
        seen,
        ConnectionError::ApplicationClosed {
            code: 42,
            reason: "bye".into()
        }
    );
    assert_eq!(pair.client.closed().await, ConnectionError::LocallyClosed);
}
