//! Bad input from a peer that speaks the wire format by hand over quinn: each case must give a
//! typed error and a close with its protocol code, never a panic, and the server must go on
//! serving other sessions.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use mpquic_core::wire::{self, Frame, Params, SessionId};
use mpquic_core::{codes, Config, ConnectionError, Endpoint, PathError, PathStatus};

const PARAMS: Params = Params {
    max_data: 1 << 20,
    max_stream_data: 1 << 20,
    max_bidi_streams: 16,
    max_uni_streams: 16,
};

struct Server {
    endpoint: Endpoint,
    roots: rustls::RootCertStore,
}

impl Server {
    fn start(config: Config) -> Self {
        let (cert, key) = certificate();
        let endpoint = Endpoint::server(
            &["127.0.0.1:0".parse().unwrap()],
            config,
            vec![cert.clone()],
            key,
        )
        .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        Self { endpoint, roots }
    }

    /// A plain quinn connection to the server from `127.0.0.k`.
    async fn raw(&self, k: usize) -> quinn::Connection {
        let client = quinn::Endpoint::client(local(k)).unwrap();
        let tls =
            quinn::ClientConfig::with_root_certificates(Arc::new(self.roots.clone())).unwrap();
        client
            .connect_with(tls, self.endpoint.local_addrs()[0], "localhost")
            .unwrap()
            .await
            .unwrap()
    }

    /// A raw connection that created a session; returns it with the welcome's session id.
    async fn raw_session(&self) -> (quinn::Connection, quinn::SendStream, SessionId) {
        let conn = self.raw(1).await;
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send_frame(&mut send, Frame::NewSession { params: PARAMS }).await;
        let Some(Frame::Welcome { session, .. }) = wire::read_frame(&mut recv).await.unwrap()
        else {
            panic!("expected a welcome");
        };
        (conn, send, session)
    }

    /// A well-behaved mpquic session still works.
    async fn still_serves(&self) {
        let client = Endpoint::client(&[local(3)], Config::default(), self.roots.clone()).unwrap();
        let conn = client
            .connect(self.endpoint.local_addrs()[0], "localhost")
            .unwrap()
            .await
            .unwrap();
        let server_conn = self.endpoint.accept().await.unwrap();
        serve_hashes(server_conn);
        send_and_check(&conn, 5, 100_000).await;
        conn.close(0, b"done");
    }
}

async fn send_frame(send: &mut quinn::SendStream, frame: Frame) {
    let mut buf = Vec::new();
    frame.encode(&mut buf).unwrap();
    send.write_all(&buf).await.unwrap();
}

/// The code the server closed `conn` with.
async fn close_code(conn: &quinn::Connection) -> u64 {
    let error = tokio::time::timeout(Duration::from_secs(10), conn.closed())
        .await
        .expect("the server closed the connection");
    match error {
        quinn::ConnectionError::ApplicationClosed(close) => close.error_code.into_inner(),
        other => panic!("expected an application close, got {other}"),
    }
}

/// Sends raw chunk-stream bytes on a new session and checks both ends of the close.
async fn chunk_case(bytes: Vec<u8>, code: u64) {
    let server = Server::start(Config::default());
    let (conn, _control, _) = server.raw_session().await;
    let server_conn = server.endpoint.accept().await.unwrap();
    let mut stream = conn.open_uni().await.unwrap();
    stream.write_all(&bytes).await.unwrap();
    let _ = stream.finish();
    assert_eq!(close_code(&conn).await, code);
    match tokio::time::timeout(Duration::from_secs(10), server_conn.closed())
        .await
        .unwrap()
    {
        ConnectionError::Protocol(e) => assert_eq!(e.code(), code, "{e}"),
        other => panic!("expected a protocol error, got {other}"),
    }
    server.still_serves().await;
}

fn chunks(stream: u64, parts: &[(u64, &[u8])]) -> Vec<u8> {
    let mut buf = Vec::new();
    wire::encode_chunk_stream_header(stream, &mut buf).unwrap();
    for (offset, data) in parts {
        wire::encode_chunk_header(*offset, data.len() as u64, &mut buf).unwrap();
        buf.extend_from_slice(data);
    }
    buf
}

/// Client-initiated unidirectional stream 0.
const UNI: u64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_beyond_the_stream_window() {
    chunk_case(chunks(UNI, &[(4 << 20, b"x")]), codes::FLOW_CONTROL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_chunks_with_different_bytes() {
    chunk_case(
        chunks(UNI, &[(0, b"hello"), (2, b"LLo")]),
        codes::CONFLICTING_DATA,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_for_a_stream_never_opened() {
    // Stream 1 is the server's first bidirectional stream, which it never opened.
    chunk_case(chunks(1, &[(0, b"x")]), codes::STREAM_STATE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_varint_that_overflows() {
    // offset + length past 2^62 - 1.
    let mut bytes = Vec::new();
    wire::encode_chunk_stream_header(UNI, &mut bytes).unwrap();
    wire::put_varint(&mut bytes, wire::MAX_VARINT - 1).unwrap();
    wire::put_varint(&mut bytes, 10).unwrap();
    bytes.extend_from_slice(&[0; 10]);
    chunk_case(bytes, codes::FRAME_ENCODING).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_longer_than_its_declared_length() {
    let server = Server::start(Config::default());
    let (conn, mut control, _) = server.raw_session().await;
    let server_conn = server.endpoint.accept().await.unwrap();
    // MAX_DATA (0x10) declaring a 1-byte payload whose varint needs 4 bytes.
    control
        .write_all(&[0x10, 0x01, 0x80, 0x01, 0x00, 0x00])
        .await
        .unwrap();
    assert_eq!(close_code(&conn).await, codes::FRAME_ENCODING);
    assert!(matches!(
        server_conn.closed().await,
        ConnectionError::Protocol(mpquic_core::ProtocolError::Wire(_))
    ));
    server.still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_with_a_wrong_secret() {
    let server = Server::start(Config::default());
    let (good, _control, session) = server.raw_session().await;
    let _server_conn = server.endpoint.accept().await.unwrap();
    let joiner = server.raw(2).await;
    let (mut send, _recv) = joiner.open_bi().await.unwrap();
    let join = Frame::Join {
        session,
        proof: [0; 32],
        params: PARAMS,
    };
    send_frame(&mut send, join).await;
    assert_eq!(close_code(&joiner).await, codes::JOIN_REFUSED);
    // The session the join named is untouched.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(good.close_reason().is_none());
    server.still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_for_an_unknown_session() {
    let server = Server::start(Config::default());
    let joiner = server.raw(2).await;
    let (mut send, _recv) = joiner.open_bi().await.unwrap();
    let join = Frame::Join {
        session: SessionId(42),
        proof: [0; 32],
        params: PARAMS,
    };
    send_frame(&mut send, join).await;
    assert_eq!(close_code(&joiner).await, codes::UNKNOWN_SESSION);
    server.still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_paths_than_allowed() {
    let mut server_config = Config::default();
    server_config.max_paths(2).unwrap();
    let server = Server::start(server_config);
    let client = Endpoint::client(&[local(1)], Config::default(), server.roots.clone()).unwrap();
    let addr = server.endpoint.local_addrs()[0];
    let conn = client.connect(addr, "localhost").unwrap().await.unwrap();
    conn.open_path(local(2), addr, PathStatus::Available)
        .await
        .unwrap();
    let refused = conn.open_path(local(3), addr, PathStatus::Available).await;
    assert!(
        matches!(
            refused,
            Err(PathError::Refused {
                code: codes::TOO_MANY_PATHS,
                ..
            })
        ),
        "{refused:?}"
    );
    // The session goes on over its two paths.
    let server_conn = server.endpoint.accept().await.unwrap();
    serve_hashes(server_conn);
    send_and_check(&conn, 1, 200_000).await;
    server.still_serves().await;
}
