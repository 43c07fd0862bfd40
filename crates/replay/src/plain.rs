//! The baseline's transport: one plain quinn connection (no multipath), TLS 1.3 with the same
//! self-signed certificate as mpquic's runs, ALPN `h3`, for HTTP/3 through h3-quinn.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mpquic_core::CongestionControl;
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{IdleTimeout, TransportConfig, VarInt};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::RunError;

/// HTTP/3's ALPN token (RFC 9114, section 3.1).
const ALPN: &[u8] = b"h3";

/// A stream's receive window: mpquic's default ([`mpquic_core::Config`]), so that the baseline
/// differs from mpquic in its paths, not in flow control.
const STREAM_RECEIVE_WINDOW: u32 = 4 << 20;
/// The connection's receive window: mpquic's default.
const RECEIVE_WINDOW: u32 = 16 << 20;
/// Concurrent bidirectional streams (requests): mpquic's default, where quinn's is 100.
const MAX_CONCURRENT_BIDI: u32 = 1024;
/// The idle timeout: mpquic's default.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_error(e: impl std::fmt::Display) -> RunError {
    RunError::Certificate(e.to_string())
}

/// quinn's defaults with `congestion`, and mpquic's defaults for the receive windows, the
/// request-stream limit and the idle timeout.
fn transport(congestion: &CongestionControl) -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    t.congestion_controller_factory(congestion.factory())
        .stream_receive_window(STREAM_RECEIVE_WINDOW.into())
        .receive_window(RECEIVE_WINDOW.into())
        .max_concurrent_bidi_streams(VarInt::from_u32(MAX_CONCURRENT_BIDI))
        .max_idle_timeout(IdleTimeout::try_from(IDLE_TIMEOUT).ok());
    Arc::new(t)
}

/// A plain quinn server on `addr` with `cert` and `key`, speaking `h3`.
///
/// # Errors
/// [`RunError::Certificate`] for a TLS set-up failure, [`RunError::Connect`] when `addr`
/// cannot be bound.
pub fn quinn_server(
    addr: SocketAddr,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    congestion: &CongestionControl,
) -> Result<quinn::Endpoint, RunError> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls_error)?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(tls_error)?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = QuicServerConfig::try_from(tls).map_err(tls_error)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(transport(congestion));
    quinn::Endpoint::server(config, addr)
        .map_err(|e| RunError::Connect(format!("binding {addr}: {e}")))
}

/// Connects a plain quinn client from `local` to `remote`, trusting `cert` for `localhost`.
///
/// # Errors
/// [`RunError::Certificate`] for a TLS set-up failure, [`RunError::Connect`] when binding or
/// the handshake fails.
pub async fn quinn_connect(
    local: SocketAddr,
    remote: SocketAddr,
    cert: CertificateDer<'static>,
    congestion: &CongestionControl,
) -> Result<(quinn::Endpoint, quinn::Connection), RunError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).map_err(tls_error)?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls_error)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = QuicClientConfig::try_from(tls).map_err(tls_error)?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(transport(congestion));
    let endpoint = quinn::Endpoint::client(local)
        .map_err(|e| RunError::Connect(format!("binding {local}: {e}")))?;
    let conn = endpoint
        .connect_with(config, remote, "localhost")
        .map_err(|e| RunError::Connect(e.to_string()))?
        .await
        .map_err(|e| RunError::Connect(e.to_string()))?;
    Ok((endpoint, conn))
}
