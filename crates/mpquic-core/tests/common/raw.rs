//! A peer that speaks the wire format by hand over plain quinn, to send what mpquic's own
//! sender never would.

use std::sync::Arc;
use std::time::Duration;

use mpquic_core::wire::{self, Frame, Params, SessionId};
use mpquic_core::{session, Config, Connection, Endpoint, SelfSigned, VarInt};
use quinn::ConnectionIdGenerator;
use tokio::sync::{mpsc, Mutex};

use super::{local, send_and_check, serve_hashes};

/// The parameters the raw peer announces: generous, so that only the server's limits matter.
pub const PARAMS: Params = Params {
    max_data: 1 << 20,
    max_stream_data: 1 << 20,
    max_bidi_streams: 16,
    max_uni_streams: 16,
};

/// Client-initiated unidirectional stream 0.
pub const UNI: u64 = 2;

/// An mpquic server on 127.0.0.1 and its certificate, accepting every attempt at a session.
pub struct Server {
    pub endpoint: Arc<Endpoint>,
    pub certificate: SelfSigned,
    sessions: Mutex<mpsc::UnboundedReceiver<Connection>>,
    acceptor: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

/// What the server said when it accepted a raw session.
pub struct RawSession {
    pub conn: quinn::Connection,
    pub control: quinn::SendStream,
    pub control_recv: quinn::RecvStream,
    pub session: SessionId,
    pub secret: [u8; 16],
}

impl Server {
    pub fn start(config: Config) -> Self {
        let certificate = SelfSigned::new(&["localhost"]).unwrap();
        let mut tls = certificate.server_config().unwrap();
        tls.transport_config(Arc::new(config));
        let endpoint = Arc::new(Endpoint::server(tls, "127.0.0.1:0".parse().unwrap()).unwrap());
        let (sessions, accepted) = mpsc::unbounded_channel();
        let acceptor = tokio::spawn({
            let endpoint = endpoint.clone();
            async move {
                while let Some(incoming) = endpoint.accept().await {
                    let sessions = sessions.clone();
                    tokio::spawn(async move {
                        if let Ok(conn) = incoming.await {
                            let _ = sessions.send(conn);
                        }
                    });
                }
            }
        });
        Self {
            endpoint,
            certificate,
            sessions: Mutex::new(accepted),
            acceptor,
        }
    }

    /// The next session the server set up.
    pub async fn accept(&self) -> Connection {
        self.sessions.lock().await.recv().await.unwrap()
    }

    /// A plain quinn connection to the server from `127.0.0.k`, as a new session's would be.
    pub async fn raw(&self, k: usize) -> quinn::Connection {
        self.raw_with(k, quinn::TransportConfig::default(), false)
            .await
    }

    /// A plain quinn connection to the server from `127.0.0.k`, as a join's would be.
    pub async fn raw_joiner(&self, k: usize) -> quinn::Connection {
        self.raw_with(k, quinn::TransportConfig::default(), true)
            .await
    }

    /// Like [`Server::raw`] or [`Server::raw_joiner`] with the client's own quinn transport
    /// settings.
    pub async fn raw_with(
        &self,
        k: usize,
        transport: quinn::TransportConfig,
        join: bool,
    ) -> quinn::Connection {
        let client = quinn::Endpoint::client(local(k)).unwrap();
        let roots = Arc::new(self.certificate.roots().unwrap());
        let mut tls = quinn::ClientConfig::with_root_certificates(roots).unwrap();
        tls.transport_config(Arc::new(transport));
        if join {
            tls.initial_dst_cid_provider(Arc::new(|| {
                quinn_proto::RandomConnectionIdGenerator::new(session::JOIN_CID_LEN).generate_cid()
            }));
        }
        client
            .connect_with(tls, self.endpoint.local_addrs()[0], "localhost")
            .unwrap()
            .await
            .unwrap()
    }

    /// A raw connection that created a session.
    pub async fn raw_session(&self) -> RawSession {
        let conn = self.raw(1).await;
        let (mut control, mut control_recv) = conn.open_bi().await.unwrap();
        send_frame(&mut control, Frame::NewSession { params: PARAMS }).await;
        let Some(Frame::Welcome {
            session, secret, ..
        }) = mpquic_core::read_frame(&mut control_recv).await.unwrap()
        else {
            panic!("expected a welcome");
        };
        RawSession {
            conn,
            control,
            control_recv,
            session,
            secret,
        }
    }

    /// A well-behaved mpquic session still works.
    pub async fn still_serves(&self) {
        let mut client = Endpoint::client(local(3)).unwrap();
        client.set_default_client_config(self.certificate.client_config().unwrap());
        let conn = client
            .connect(self.endpoint.local_addrs()[0], "localhost")
            .unwrap()
            .await
            .unwrap();
        serve_hashes(self.accept().await);
        send_and_check(&conn, 5, 100_000).await;
        conn.close(VarInt::from_u32(0), b"done");
    }
}

pub async fn send_frame(send: &mut quinn::SendStream, frame: Frame) {
    let mut buf = Vec::new();
    frame.encode(&mut buf).unwrap();
    send.write_all(&buf).await.unwrap();
}

/// The code the server closed `conn` with, waiting at most 10 s.
pub async fn close_code(conn: &quinn::Connection) -> u64 {
    let error = tokio::time::timeout(Duration::from_secs(10), conn.closed())
        .await
        .expect("the server closed the connection");
    match error {
        quinn::ConnectionError::ApplicationClosed(close) => close.error_code.into_inner(),
        other => panic!("expected an application close, got {other}"),
    }
}

/// A chunk stream's bytes: the header for `stream`, then each `(offset, data)` as a chunk.
pub fn chunks(stream: u64, parts: &[(u64, &[u8])]) -> Vec<u8> {
    let mut buf = Vec::new();
    wire::encode_chunk_stream_header(stream, &mut buf).unwrap();
    buf.extend_from_slice(&chunks_body(parts));
    buf
}

/// Chunks without the stream header, for a chunk stream already started.
pub fn chunks_body(parts: &[(u64, &[u8])]) -> Vec<u8> {
    let mut buf = Vec::new();
    for (offset, data) in parts {
        wire::encode_chunk_header(*offset, data.len() as u64, &mut buf).unwrap();
        buf.extend_from_slice(data);
    }
    buf
}
