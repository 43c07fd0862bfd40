//! Bad input from a peer that speaks the wire format by hand over quinn: each case must give a
//! typed error and a close with its protocol code, never a panic, and the server must go on
//! serving other sessions.

mod common;

use std::time::Duration;

use common::raw::*;
use common::*;
use mpquic_core::wire::{self, Frame, SessionId};
use mpquic_core::{codes, Config, ConnectionError, Endpoint, PathConfig, PathError};

/// Checks both ends of a raw session's close with `code`, and that the server goes on.
async fn closed_with(
    server: &Server,
    conn: &quinn::Connection,
    server_conn: &mpquic_core::Connection,
    code: u64,
) {
    assert_eq!(close_code(conn).await, code);
    match tokio::time::timeout(Duration::from_secs(10), server_conn.closed())
        .await
        .unwrap()
    {
        ConnectionError::Protocol(e) => assert_eq!(e.code(), code, "{e}"),
        other => panic!("expected a protocol error, got {other}"),
    }
    server.still_serves().await;
}

/// Sends raw chunk-stream bytes on a new session and checks both ends of the close.
async fn chunk_case(bytes: Vec<u8>, code: u64) {
    let server = Server::start(Config::default());
    let RawSession { conn, .. } = server.raw_session().await;
    let server_conn = server.accept().await;
    let mut stream = conn.open_uni().await.unwrap();
    stream.write_all(&bytes).await.unwrap();
    let _ = stream.finish();
    closed_with(&server, &conn, &server_conn, code).await;
}

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
    let RawSession {
        conn, mut control, ..
    } = server.raw_session().await;
    let server_conn = server.accept().await;
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
    let RawSession {
        conn: good,
        session,
        ..
    } = server.raw_session().await;
    let server_conn = server.accept().await;
    let joiner = server.raw_joiner(2).await;
    let (mut send, _recv) = joiner.open_bi().await.unwrap();
    let join = Frame::Join {
        session,
        proof: [0; 32],
        params: PARAMS,
    };
    send_frame(&mut send, join).await;
    assert_eq!(close_code(&joiner).await, codes::JOIN_REFUSED);
    // The session the join named is untouched: it still carries a stream to its client.
    let mut send = server_conn.open_uni().await.unwrap();
    send.write_all(b"still here").await.unwrap();
    send.finish().unwrap();
    let mut chunks = tokio::time::timeout(Duration::from_secs(10), good.accept_uni())
        .await
        .expect("a chunk stream of the session")
        .unwrap();
    let received = chunks.read_to_end(1024).await.unwrap();
    assert!(received.ends_with(b"still here"), "{received:?}");
    server.still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_for_an_unknown_session() {
    let server = Server::start(Config::default());
    let joiner = server.raw_joiner(2).await;
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

/// A path says what it is twice, by its first connection ID and by its first frame: the two must
/// agree, or a join could pass the application's decision on sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_whose_first_frame_belies_its_connection_id() {
    let server = Server::start(Config::default());
    let first = server.raw_session().await;
    let _server_conn = server.accept().await;

    let joiner = server.raw_joiner(2).await;
    let (mut send, _recv) = joiner.open_bi().await.unwrap();
    send_frame(&mut send, Frame::NewSession { params: PARAMS }).await;
    assert_eq!(close_code(&joiner).await, codes::PROTOCOL_VIOLATION);

    let session_like = server.raw(3).await;
    let exported = mpquic_core::session::exporter(&session_like, first.session).unwrap();
    let (mut send, _recv) = session_like.open_bi().await.unwrap();
    let join = Frame::Join {
        session: first.session,
        proof: mpquic_core::session::proof(&first.secret, first.session, &exported),
        params: PARAMS,
    };
    send_frame(&mut send, join).await;
    assert_eq!(close_code(&session_like).await, codes::PROTOCOL_VIOLATION);
    server.still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_paths_than_allowed() {
    let mut server_config = Config::default();
    server_config.max_paths(2).unwrap();
    let server = Server::start(server_config);
    let mut client = Endpoint::client(local(1)).unwrap();
    client.set_default_client_config(server.certificate.client_config().unwrap());
    let addr = server.endpoint.local_addr().unwrap();
    let conn = client.connect(addr, "localhost").unwrap().await.unwrap();
    conn.open_path(&PathConfig::new(local(2), addr))
        .await
        .unwrap();
    let refused = conn.open_path(&PathConfig::new(local(3), addr)).await;
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
    let server_conn = server.accept().await;
    serve_hashes(server_conn);
    send_and_check(&conn, 1, 200_000).await;
    server.still_serves().await;
}

/// Sends `frame` on a new raw session's control stream and checks both ends of the close.
async fn control_case(config: Config, frame: Frame, code: u64) {
    let server = Server::start(config);
    let RawSession {
        conn, mut control, ..
    } = server.raw_session().await;
    let server_conn = server.accept().await;
    send_frame(&mut control, frame).await;
    closed_with(&server, &conn, &server_conn, code).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_whose_final_size_is_beyond_the_stream_window() {
    // RFC 9000 section 4.5: a final size beyond the window is a flow-control error, like a chunk.
    let mut config = Config::default();
    config.stream_receive_window(1 << 20).unwrap();
    let reset = Frame::ResetStream {
        stream: UNI,
        code: 0,
        final_size: (1 << 20) + 1,
    };
    control_case(config, reset, codes::FLOW_CONTROL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_with_the_largest_final_size() {
    // Four of these once wrapped the connection's counters.
    let reset = Frame::ResetStream {
        stream: UNI,
        code: 0,
        final_size: wire::MAX_VARINT,
    };
    control_case(Config::default(), reset, codes::FLOW_CONTROL).await;
}
