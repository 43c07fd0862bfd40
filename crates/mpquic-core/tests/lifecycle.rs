//! What a connection and an endpoint hold must end with what it belongs to: a session refused
//! late, a path closed, a join that lost the race with its session's end. And a server bounds
//! what strangers may hold: sessions, half-open connections, idle sessions.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::raw::*;
use common::*;
use mpquic_core::wire::Frame;
use mpquic_core::{
    codes, session, Config, ConnectionError, Endpoint, PathConfig, PathError, PathStatus,
    ReadError, VarInt, WriteError,
};

/// Tasks alive on this runtime.
fn live_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Waits (at most 5 s) until at most `limit` tasks are alive; returns how many are.
async fn tasks_settle_to(limit: usize) -> usize {
    for _ in 0..100 {
        if live_tasks() <= limit {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    live_tasks()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_welcome_cannot_be_written_leaves_no_task() {
    const ATTEMPTS: usize = 100;
    let server = Arc::new(Server::start(Config::default()));
    server.still_serves().await;
    let before = tasks_settle_to(0).await;
    // A session that got its welcome after all is taken and ended at once.
    let acceptor = {
        let server = server.clone();
        tokio::spawn(async move {
            loop {
                drop(server.accept().await);
            }
        })
    };
    for _ in 0..ATTEMPTS {
        let conn = server.raw(1).await;
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        // The new session and the stop travel together: the server reads the frame, then finds
        // that it cannot answer.
        send_frame(&mut send, Frame::NewSession { params: PARAMS }).await;
        recv.stop(0u32.into()).unwrap();
        let _ = tokio::time::timeout(Duration::from_millis(500), conn.closed()).await;
        conn.close(0u32.into(), b"bye");
    }
    acceptor.abort();
    let _ = acceptor.await;
    let after = tasks_settle_to(before + 5).await;
    assert!(
        after <= before + 5,
        "{ATTEMPTS} refused sessions left {} tasks behind",
        after.saturating_sub(before)
    );
    server.still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_paths_and_their_sockets_are_released() {
    let pair = pair(2, "lrf").await;
    serve_hashes(pair.server.clone());
    let churn = |rounds: u64| {
        let client = pair.client.clone();
        let addr = pair.server_addr;
        async move {
            for round in 0..rounds {
                let second = client
                    .paths()
                    .into_iter()
                    .find(|p| p.status != PathStatus::Down && p.id.0 != 0)
                    .unwrap()
                    .id;
                client.close_path(second).unwrap();
                // From a fresh port each time, as the crate's example does.
                client
                    .open_path(&PathConfig::new(local(2), addr))
                    .await
                    .unwrap();
                send_and_check(&client, round, 10_000).await;
            }
        }
    };
    churn(10).await;
    let tasks = tasks_settle_to(0).await;
    churn(40).await;
    let after = tasks_settle_to(tasks).await;
    assert!(
        after <= tasks + 3,
        "40 path churns grew the tasks from {tasks} to {after}"
    );
    // Each path from port 0 had its own quinn endpoint (a socket and a task): the tasks above
    // count them.
    assert_eq!(pair.client_endpoint.local_addrs().len(), 1);
    let server_paths = pair.server.paths().len();
    assert!(
        server_paths <= 2 + mpquic_core::CLOSED_PATHS_KEPT,
        "the server's connection still lists {server_paths} paths"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_and_stop_codes_reach_the_peer() {
    let pair = pair(1, "lrf").await;
    let (mut send, _recv) = pair.client.open_bi().await.unwrap();
    send.write_all(b"abc").await.unwrap();
    send.reset(VarInt::from_u32(5)).unwrap();
    let (_, mut recv) = pair.server.accept_bi().await.unwrap();
    let read = tokio::time::timeout(Duration::from_secs(10), recv.read_to_end(1024))
        .await
        .unwrap();
    assert!(
        matches!(
            read,
            Err(mpquic_core::ReadToEndError::Read(ReadError::Reset(5)))
        ),
        "{read:?}"
    );

    let (mut send, mut recv) = pair.client.open_bi().await.unwrap();
    send.write_all(b"hello").await.unwrap();
    let (_, mut server_recv) = pair.server.accept_bi().await.unwrap();
    server_recv.stop(VarInt::from_u32(9)).unwrap();
    let stopped = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match send.write(b"more").await {
                Ok(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                Err(e) => return e,
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(stopped, WriteError::Stopped(9));
    drop(recv.stop(VarInt::from_u32(0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_that_completes_after_its_session_ended_is_closed() {
    let server = Server::start(Config::default());
    let first = server.raw_session().await;
    let server_conn = server.accept().await;
    // A joiner that takes the server's answer one byte at a time, so the server is still
    // writing `Joined` when the session ends.
    let mut transport = quinn::TransportConfig::default();
    transport.stream_receive_window(1u32.into());
    let joiner = server.raw_with(2, transport, true).await;
    let exported = session::exporter(&joiner, first.session).unwrap();
    let (mut send, mut recv) = joiner.open_bi().await.unwrap();
    let join = Frame::Join {
        session: first.session,
        proof: session::proof(&first.secret, first.session, &exported),
        params: PARAMS,
    };
    send_frame(&mut send, join).await;
    let mut byte = [0u8; 1];
    recv.read_exact(&mut byte).await.unwrap();

    first.conn.close(0u32.into(), b"bye");
    tokio::time::timeout(Duration::from_secs(10), server_conn.closed())
        .await
        .unwrap();
    // Now let the server finish its answer (`Joined` is three bytes): it must not keep the path.
    let mut rest = [0u8; 2];
    let _ = tokio::time::timeout(Duration::from_secs(3), recv.read_exact(&mut rest)).await;
    let closed = tokio::time::timeout(Duration::from_secs(3), joiner.closed()).await;
    assert!(closed.is_ok(), "the joined path outlived its session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_past_the_limit_is_refused_and_the_server_goes_on() {
    const LIMIT: usize = 100;
    let mut config = Config::default();
    config.max_sessions(LIMIT).unwrap();
    let server = Server::start(config);
    let mut sessions = Vec::new();
    for _ in 0..LIMIT {
        let raw = server.raw_session().await;
        sessions.push((raw, server.accept().await));
    }
    let mut client = Endpoint::client(local(3)).unwrap();
    client.set_default_client_config(server.certificate.client_config().unwrap());
    let addr = server.endpoint.local_addr().unwrap();
    let refused = client.connect(addr, "localhost").unwrap().await;
    assert!(
        matches!(
            refused,
            Err(PathError::Refused {
                code: codes::SESSION_LIMIT,
                ..
            })
        ),
        "{refused:?}"
    );
    // One session ends: a new one is served.
    let (ended, _) = sessions.pop().unwrap();
    ended.conn.close(0u32.into(), b"bye");
    ended.conn.closed().await;
    let served = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if client.connect(addr, "localhost").unwrap().await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(served.is_ok(), "a freed slot was never served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_past_the_limit_are_refused() {
    const LIMIT: usize = 4;
    let mut config = Config::default();
    config.max_half_open(LIMIT).unwrap();
    let server = Server::start(config);
    // Connections that never say what they are.
    let mut silent = Vec::new();
    for _ in 0..LIMIT {
        silent.push(server.raw(1).await);
    }
    let client = quinn::Endpoint::client(local(2)).unwrap();
    let roots = std::sync::Arc::new(server.certificate.roots().unwrap());
    let tls = quinn::ClientConfig::with_root_certificates(roots).unwrap();
    let refused = client
        .connect_with(tls, server.endpoint.local_addrs()[0], "localhost")
        .unwrap()
        .await;
    assert!(
        matches!(
            refused,
            Err(quinn::ConnectionError::ConnectionClosed(ref close))
                if close.error_code == quinn::TransportErrorCode::CONNECTION_REFUSED
        ),
        "{refused:?}"
    );
    // Once they go, the server takes sessions again.
    for conn in &silent {
        conn.close(0u32.into(), b"bye");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_ends_though_its_paths_keep_alive() {
    let mut config = Config::default();
    config.idle_timeout(Duration::from_millis(600)).unwrap();
    let pair = pair_with(1, config).await;
    // Activity keeps it open...
    serve_hashes(pair.server.clone());
    for round in 0..4 {
        send_and_check(&pair.client, round, 1000).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(pair.client.close_reason().is_none());
    // ...and silence ends it, while quinn's keep-alives would hold the paths forever.
    let closed = tokio::time::timeout(Duration::from_secs(5), pair.server.closed())
        .await
        .expect("the idle session ended");
    assert_eq!(closed, ConnectionError::TimedOut);
    let closed = tokio::time::timeout(Duration::from_secs(5), pair.client.closed())
        .await
        .unwrap();
    assert_eq!(closed, ConnectionError::TimedOut);
}
