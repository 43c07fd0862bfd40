//! Shared set-up for the loopback tests: a server on 127.0.0.1 and a client whose paths come
//! from 127.0.0.1, 127.0.0.2, ... (distinct addresses per path).

#![allow(dead_code)]

pub mod raw;
pub mod relayed;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mpquic_core::{Config, Connection, Endpoint, PathConfig, PathStatus, SelfSigned};
use sha2::{Digest, Sha256};

pub struct Pair {
    pub client: Connection,
    pub server: Connection,
    pub server_addr: SocketAddr,
    pub client_endpoint: Endpoint,
    pub server_endpoint: Endpoint,
}

pub fn local(k: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, k as u8], 0))
}

/// A client and server over `paths` paths with `scheduler`.
pub async fn pair(paths: usize, scheduler: &str) -> Pair {
    let mut config = Config::default();
    config.scheduler(scheduler.parse().unwrap());
    pair_with(paths, config).await
}

pub async fn pair_with(paths: usize, config: Config) -> Pair {
    pair_with_server_config(paths, config.clone(), config).await
}

/// A session from `client`'s first path to `server` at `addr`: both ends of it. The server's
/// side comes up only once its application accepts it, as with quinn.
pub async fn connect_and_accept(
    client: &Endpoint,
    server: &Endpoint,
    addr: SocketAddr,
) -> (Connection, Connection) {
    tokio::join!(
        async { client.connect(addr, "localhost").unwrap().await.unwrap() },
        async { server.accept().await.unwrap().await.unwrap() },
    )
}

/// Like [`pair_with`], with the server on its own config.
pub async fn pair_with_server_config(paths: usize, config: Config, server_config: Config) -> Pair {
    let certificate = SelfSigned::new(&["localhost"]).unwrap();
    let mut server_tls = certificate.server_config().unwrap();
    server_tls.transport_config(Arc::new(server_config));
    let server_endpoint = Endpoint::server(server_tls, "127.0.0.1:0".parse().unwrap()).unwrap();
    let server_addr = server_endpoint.local_addr().unwrap();
    let mut client_tls = certificate.client_config().unwrap();
    client_tls.transport_config(Arc::new(config));
    let mut client_endpoint = Endpoint::client(local(1)).unwrap();
    client_endpoint.set_default_client_config(client_tls);
    let (client, server) =
        connect_and_accept(&client_endpoint, &server_endpoint, server_addr).await;
    for k in 2..=paths {
        client
            .open_path(&PathConfig::new(local(k), server_addr))
            .await
            .unwrap();
    }
    // Wait until the server has every path too.
    tokio::time::timeout(Duration::from_secs(5), async {
        while server
            .paths()
            .iter()
            .filter(|p| p.status != PathStatus::Down)
            .count()
            < paths
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("server sees every path");
    Pair {
        client,
        server,
        server_addr,
        client_endpoint,
        server_endpoint,
    }
}

/// Deterministic bytes for stream `seed` ([`Payload`](mpquic_core::sim::Payload)).
pub fn payload(seed: u64, len: usize) -> Vec<u8> {
    mpquic_core::sim::Payload::new(seed, len as u64).into_vec()
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Server side of the echo-hash protocol: every bidi stream is read to its end and answered
/// with the sha256 of what arrived.
pub fn serve_hashes(server: Connection) {
    tokio::spawn(async move {
        while let Ok((mut send, mut recv)) = server.accept_bi().await {
            tokio::spawn(async move {
                let mut hasher = Sha256::new();
                while let Some(chunk) = recv.read_chunk(usize::MAX).await.unwrap() {
                    hasher.update(&chunk);
                }
                let digest: [u8; 32] = hasher.finalize().into();
                send.write_all(&digest).await.unwrap();
                send.finish().unwrap();
            });
        }
    });
}

/// Sends `len` bytes on a new stream and checks the server's sha256 of them.
pub async fn send_and_check(client: &Connection, seed: u64, len: usize) -> mpquic_core::SendStream {
    let data = payload(seed, len);
    let (mut send, mut recv) = client.open_bi().await.unwrap();
    send.write_all(&data).await.unwrap();
    send.finish().unwrap();
    let digest = recv.read_to_end(64).await.unwrap();
    assert_eq!(
        digest,
        sha256(&data),
        "stream {seed} of {len} bytes arrived intact"
    );
    send
}
