//! Receive credit: what the application reads, stops or has reset must return to the
//! connection's window, and the window must open as data is read, so that unread streams block
//! others only when they truly fill it.

mod common;

use std::time::Duration;

use common::*;
use mpquic_core::{Config, ReadError};

/// A server whose connection window is 1 MiB.
fn small_window(stream_window: u64) -> Config {
    let mut config = Config::default();
    config
        .receive_window(1 << 20)
        .unwrap()
        .stream_receive_window(stream_window)
        .unwrap();
    config
}

/// Waits (at most 10 s) until the server has received `bytes` stream bytes in all.
async fn server_received(server: &mpquic_core::Connection, bytes: u64) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while server.paths().iter().map(|p| p.bytes_received).sum::<u64>() < bytes {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the server received the bytes");
}

/// Reads a whole stream, failing after 10 s.
async fn read_in_time(recv: &mut mpquic_core::RecvStream, limit: usize) -> Vec<u8> {
    tokio::time::timeout(Duration::from_secs(10), recv.read_to_end(limit))
        .await
        .expect("the stream arrived in time")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_a_reset_stream_returns_its_buffered_bytes_to_the_window() {
    const STREAM: usize = 64 * 1024;
    let pair = pair_with_server_config(1, Config::default(), small_window(256 * 1024)).await;
    // Sixteen streams fill the connection window, and stay buffered at the server...
    let mut sends = Vec::new();
    for seed in 0..16 {
        let mut send = pair.client.open_uni().await.unwrap();
        send.write_all(&payload(seed, STREAM)).await.unwrap();
        sends.push(send);
    }
    server_received(&pair.server, 16 * STREAM as u64).await;
    // ...until their writer resets them, and the server reads the resets.
    for send in &mut sends {
        send.reset(7).unwrap();
    }
    // The writer forgets a reset stream once the server has acknowledged the reset, and then
    // refuses settings for it: that is when the server has them all.
    tokio::time::timeout(Duration::from_secs(10), async {
        for send in &sends {
            while pair.client.set_stream_urgency(send.id(), 3, false).is_ok() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    })
    .await
    .expect("the server acknowledged the resets");
    for _ in 0..16 {
        let mut recv = pair.server.accept_uni().await.unwrap();
        let result = tokio::time::timeout(Duration::from_secs(10), recv.read_chunk(usize::MAX))
            .await
            .unwrap();
        assert!(
            matches!(result, Err(ReadError::Reset(7))),
            "expected the reset, got {:?}",
            result.map(|chunk| chunk.map(|c| c.len()))
        );
    }
    // The window they held is free again: a seventeenth stream gets through.
    let data = payload(16, STREAM);
    let mut send = pair.client.open_uni().await.unwrap();
    send.write_all(&data).await.unwrap();
    send.finish().unwrap();
    let mut recv = pair.server.accept_uni().await.unwrap();
    assert_eq!(read_in_time(&mut recv, STREAM).await, data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_streams_below_the_window_do_not_block_the_others() {
    const UNREAD: usize = 300 * 1024;
    const READ: usize = 2 << 20;
    let pair = pair_with_server_config(1, Config::default(), small_window(512 * 1024)).await;
    // Two streams hold 600 KiB of the 1 MiB window, unread.
    let mut held = Vec::new();
    for seed in 0..2 {
        let mut send = pair.client.open_uni().await.unwrap();
        send.write_all(&payload(seed, UNREAD)).await.unwrap();
        send.finish().unwrap();
        held.push(pair.server.accept_uni().await.unwrap());
    }
    server_received(&pair.server, 2 * UNREAD as u64).await;
    // A third stream, twice the window, flows through the rest as it is read.
    let data = payload(2, READ);
    let client = pair.client.clone();
    let writer = tokio::spawn(async move {
        let mut send = client.open_uni().await.unwrap();
        send.write_all(&data).await.unwrap();
        send.finish().unwrap();
        send
    });
    let mut recv = pair.server.accept_uni().await.unwrap();
    assert_eq!(read_in_time(&mut recv, READ).await, payload(2, READ));
    writer.await.unwrap();
    // The held streams were intact all along.
    for (seed, mut recv) in held.into_iter().enumerate() {
        assert_eq!(
            read_in_time(&mut recv, UNREAD).await,
            payload(seed as u64, UNREAD)
        );
    }
}
