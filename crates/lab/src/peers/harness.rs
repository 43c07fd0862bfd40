//! The bulk harnesses for plain quinn, noq, Linux MPTCP and plain TCP: `cargo xtask peers
//! harness quinn-server|quinn-client|noq-server|noq-client|mptcp-server|mptcp-client|tcp-server|tcp-client`
//! (hidden; `peers bulk` and `peers fairness` start them inside the testbed's namespaces).
//!
//! The exchange of the lab's `bulk`, run by the same code ([`crate::transfer`]): the client
//! opens one bidirectional stream, writes `--size` bytes of deterministic pseudo-random data
//! ([`SEED`]) and finishes it; the server hashes what arrives and answers with the sha256; the
//! client compares it with its own and prints one JSON line `{"bytes", "seconds",
//! "goodput_mbps", "sha256_match", "paths"}`, timed from opening the stream to the digest's
//! arrival. The server writes its self-signed certificate
//! (DER) to `--cert` before it prints `listening on ADDR`; the client trusts only that.
//!
//! - quinn 0.11, one connection from `--local` to `--remote`.
//! - noq (draft-ietf-quic-multipath-21): the client's endpoint binds `0.0.0.0:0`, connects to
//!   the first `--remote` and opens one more path to each further one with
//!   `Connection::open_path` (status available); noq decides how the stream's bytes go over
//!   them. Both ends allow as many concurrent paths as there are remotes.
//! - Linux MPTCP: TCP sockets opened with `IPPROTO_MPTCP` (socket2), optionally with
//!   `TCP_CONGESTION`; the kernel's path manager adds the subflows from the client
//!   namespace's `subflow` endpoints. No certificate; timed from the established connection
//!   to the digest. Plain TCP the same way, one connection. Their servers print a JSON line of
//!   what arrived when ([`crate::transfer::Arrivals`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use mpquic_core::SelfSigned;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};

use crate::transfer::{digest_matches, hash_stream, send_payload, BoxError, Writing};
use mpquic_core::sim::Payload;

/// The payload's seed, the same for every peer (tquic's served file too).
pub const SEED: u64 = 1;
/// How long a server waits for the client to close after answering.
const LINGER: Duration = Duration::from_secs(5);

/// The options of the hidden `peers harness` command.
#[derive(Debug, Args)]
pub struct HarnessArgs {
    #[command(subcommand)]
    role: Role,
}

/// Congestion controllers the harnesses offer (noq has BBRv3 where quinn has BBR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Cc {
    /// CUBIC (both crates' default).
    Cubic,
    /// NewReno.
    Newreno,
    /// quinn's BBR, noq's BBRv3.
    Bbr,
}

/// The congestion controller of a quinn or noq harness and where its window starts.
#[derive(Debug, Clone, Copy, Args)]
struct Control {
    #[arg(long, value_enum, default_value = "cubic")]
    cc: Cc,
    /// Bytes the congestion window starts with (default: the crate's own, 10 packets for cubic
    /// and newreno).
    #[arg(long)]
    initial_window: Option<u64>,
}

/// Where a quinn or noq server listens, where it writes its certificate, and its controller.
#[derive(Debug, Clone, Args)]
struct QuicServer {
    #[arg(long)]
    listen: SocketAddr,
    #[arg(long)]
    cert: PathBuf,
    #[command(flatten)]
    control: Control,
}

/// A kernel stream server (MPTCP or TCP).
#[derive(Debug, Clone, Args)]
struct StreamServer {
    #[arg(long)]
    listen: SocketAddr,
    /// TCP congestion control (TCP_CONGESTION); the system default if not given.
    #[arg(long)]
    cc: Option<String>,
}

/// A kernel stream client (MPTCP or TCP).
#[derive(Debug, Clone, Args)]
struct StreamClient {
    #[arg(long)]
    remote: SocketAddr,
    #[arg(long)]
    size: u64,
    /// TCP congestion control (TCP_CONGESTION); the system default if not given.
    #[arg(long)]
    cc: Option<String>,
    /// Stops writing after this long even if `--size` is not reached (30s, 2m).
    #[arg(long, value_parser = crate::transfer::parse_duration)]
    duration: Option<Duration>,
}

/// Which kernel protocol a stream harness opens.
#[derive(Debug, Clone, Copy)]
enum Kernel {
    Mptcp,
    Tcp,
}

#[derive(Debug, Subcommand)]
enum Role {
    /// A plain quinn server for one transfer.
    QuinnServer(QuicServer),
    /// A plain quinn client: one connection, one stream.
    QuinnClient {
        #[arg(long)]
        local: SocketAddr,
        #[arg(long)]
        remote: SocketAddr,
        #[arg(long)]
        cert: PathBuf,
        #[arg(long)]
        size: u64,
        #[command(flatten)]
        control: Control,
    },
    /// A noq server for one transfer, multipath enabled.
    NoqServer {
        #[command(flatten)]
        server: QuicServer,
        /// Concurrent paths it accepts.
        #[arg(long, default_value_t = 2)]
        paths: u32,
    },
    /// A Linux MPTCP server (IPPROTO_MPTCP) for one transfer.
    MptcpServer(StreamServer),
    /// A Linux MPTCP client: one connection, the kernel adds the subflows.
    MptcpClient(StreamClient),
    /// A plain TCP server for one transfer (`peers fairness`).
    TcpServer(StreamServer),
    /// A plain TCP client: one connection.
    TcpClient(StreamClient),
    /// A noq client: a path to every remote, one stream.
    NoqClient {
        /// The server's addresses, comma-separated: the first is connected to, one path is
        /// opened to each further one.
        #[arg(long, value_delimiter = ',', required = true)]
        remote: Vec<SocketAddr>,
        #[arg(long)]
        cert: PathBuf,
        #[arg(long)]
        size: u64,
        #[command(flatten)]
        control: Control,
    },
}

/// Runs a harness role to its end.
pub fn run(args: &HarnessArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start tokio: {e}"))?;
    runtime
        .block_on(role(&args.role))
        .map_err(|e| e.to_string())
}

async fn role(role: &Role) -> Result<(), BoxError> {
    match role {
        Role::QuinnServer(server) => quinn_server(server).await,
        Role::QuinnClient {
            local,
            remote,
            cert,
            size,
            control,
        } => quinn_client(*local, *remote, cert, *size, *control).await,
        Role::NoqServer { server, paths } => noq_server(server, *paths).await,
        Role::NoqClient {
            remote,
            cert,
            size,
            control,
        } => noq_client(remote, cert, *size, *control).await,
        Role::MptcpServer(server) => stream_server(Kernel::Mptcp, server).await,
        Role::MptcpClient(client) => stream_client(Kernel::Mptcp, client).await,
        Role::TcpServer(server) => stream_server(Kernel::Tcp, server).await,
        Role::TcpClient(client) => stream_client(Kernel::Tcp, client).await,
    }
}

/// Client side: sends the payload (for at most `for_at_most`, if set), prints the JSON line
/// (with `paths`, the transport's per-path statistics, unless null) and fails if the digests
/// differ.
async fn send_and_check<W, R>(
    send: &mut W,
    recv: &mut R,
    size: u64,
    for_at_most: Option<Duration>,
    paths: impl FnOnce() -> Value,
) -> Result<(), BoxError>
where
    W: AsyncWrite + Unpin,
    R: AsyncRead + Unpin,
{
    let expected = Payload::digest(SEED, size);
    let start = Instant::now();
    let writing = Writing {
        rate_bps: None,
        for_at_most,
    };
    let (digest, written) = send_payload(send, recv, SEED, size, writing).await?;
    let seconds = start.elapsed().as_secs_f64();
    let matched = digest_matches(&digest, &expected, SEED, size, written);
    let mut line = json!({
        "bytes": written,
        "seconds": seconds,
        "goodput_mbps": written as f64 * 8.0 / seconds.max(1e-9) / 1e6,
        "sha256_match": matched,
    });
    let paths = paths();
    if !paths.is_null() {
        line["paths"] = paths;
    }
    println!("{line}");
    if matched {
        Ok(())
    } else {
        Err("sha256 mismatch".into())
    }
}

/// A fresh self-signed certificate for `localhost`, written to `path` (DER).
fn certificate(
    path: &PathBuf,
) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), BoxError> {
    let certificate = SelfSigned::new(&["localhost"])?;
    let der = certificate.cert_der();
    std::fs::write(path, der.as_ref()).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok((der, certificate.key_der()))
}

fn roots(path: &PathBuf) -> Result<Arc<rustls::RootCertStore>, BoxError> {
    let der = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(der))?;
    Ok(Arc::new(roots))
}

fn listening(addr: SocketAddr) {
    use std::io::Write as _;
    println!("listening on {addr}");
    let _ = std::io::stdout().flush();
}

/// Gives `$transport` (a quinn or noq `TransportConfig`: same API) `$control`'s congestion
/// controller, starting from its initial window if it has one; `$bbr` is the crate's BBR.
macro_rules! set_controller {
    ($crate_name:ident, $transport:expr, $control:expr, $bbr:ident) => {{
        macro_rules! starting {
            ($config:ident) => {{
                let mut config = $crate_name::congestion::$config::default();
                if let Some(bytes) = $control.initial_window {
                    config.initial_window(bytes);
                }
                Arc::new(config)
            }};
        }
        match $control.cc {
            Cc::Cubic => $transport.congestion_controller_factory(starting!(CubicConfig)),
            Cc::Newreno => $transport.congestion_controller_factory(starting!(NewRenoConfig)),
            Cc::Bbr => $transport.congestion_controller_factory(starting!($bbr)),
        };
    }};
}

fn quinn_transport(control: Control) -> Arc<quinn::TransportConfig> {
    let mut transport = quinn::TransportConfig::default();
    set_controller!(quinn, transport, control, BbrConfig);
    Arc::new(transport)
}

/// A server's whole life after its config: bind, say so, serve one stream, linger. quinn and
/// noq have the same API under different names, hence a macro rather than a generic function.
macro_rules! serve_one {
    ($crate_name:ident, $config:expr, $listen:expr) => {{
        let endpoint = $crate_name::Endpoint::server($config, $listen)?;
        listening(endpoint.local_addr()?);
        let incoming = endpoint.accept().await.ok_or("endpoint closed")?;
        let conn = incoming.await?;
        let (mut send, mut recv) = conn.accept_bi().await?;
        hash_stream(&mut recv, &mut send).await?;
        let _ = tokio::time::timeout(LINGER, conn.closed()).await;
        Ok(())
    }};
}

/// A client's one transfer on the connected `conn`, then the close; `$paths` as for
/// [`send_and_check`].
macro_rules! send_one {
    ($endpoint:expr, $conn:expr, $size:expr, $paths:expr) => {{
        let (mut send, mut recv) = $conn.open_bi().await?;
        let outcome = send_and_check(&mut send, &mut recv, $size, None, $paths).await;
        $conn.close(0u32.into(), b"done");
        let _ = tokio::time::timeout(Duration::from_secs(2), $endpoint.wait_idle()).await;
        outcome
    }};
}

async fn quinn_server(server: &QuicServer) -> Result<(), BoxError> {
    let (der, key) = certificate(&server.cert)?;
    let mut config = quinn::ServerConfig::with_single_cert(vec![der], key)?;
    config.transport_config(quinn_transport(server.control));
    serve_one!(quinn, config, server.listen)
}

async fn quinn_client(
    local: SocketAddr,
    remote: SocketAddr,
    cert: &PathBuf,
    size: u64,
    control: Control,
) -> Result<(), BoxError> {
    let mut config = quinn::ClientConfig::with_root_certificates(roots(cert)?)?;
    config.transport_config(quinn_transport(control));
    let mut endpoint = quinn::Endpoint::client(local)?;
    endpoint.set_default_client_config(config);
    let conn = endpoint.connect(remote, "localhost")?.await?;
    send_one!(endpoint, conn, size, || Value::Null)
}

fn noq_transport(control: Control, paths: u32) -> Arc<noq::TransportConfig> {
    let mut transport = noq::TransportConfig::default();
    transport.max_concurrent_multipath_paths(paths.max(1));
    set_controller!(noq, transport, control, Bbr3Config);
    Arc::new(transport)
}

async fn noq_server(server: &QuicServer, paths: u32) -> Result<(), BoxError> {
    let (der, key) = certificate(&server.cert)?;
    let mut config = noq::ServerConfig::with_single_cert(vec![der], key)?;
    config.transport_config(noq_transport(server.control, paths));
    serve_one!(noq, config, server.listen)
}

async fn noq_client(
    remotes: &[SocketAddr],
    cert: &PathBuf,
    size: u64,
    control: Control,
) -> Result<(), BoxError> {
    let paths = u32::try_from(remotes.len()).unwrap_or(u32::MAX);
    let mut config = noq::ClientConfig::with_root_certificates(roots(cert)?)?;
    config.transport_config(noq_transport(control, paths));
    let endpoint = noq::Endpoint::client(SocketAddr::from(([0, 0, 0, 0], 0)))?;
    endpoint.set_default_client_config(config);
    let first = *remotes.first().ok_or("no remote address")?;
    let conn = endpoint.connect(first, "localhost")?.await?;
    if remotes.len() > 1 && !conn.is_multipath_enabled() {
        return Err("noq: multipath was not negotiated".into());
    }
    for remote in &remotes[1..] {
        // The server may not have issued connection ids for a new path yet: retry briefly.
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let tuple = noq::FourTuple::from_remote(*remote);
            match conn.open_path(tuple, noq::PathStatus::Available).await {
                Ok(_) => break,
                Err(noq::PathError::RemoteCidsExhausted) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(format!("noq: opening a path to {remote}: {e}").into()),
            }
        }
    }
    let paths = || noq_path_stats(&conn, remotes.len());
    send_one!(endpoint, conn, size, paths)
}

/// What noq says of each path at the end: its RTT estimate, and the acknowledgement frames and
/// bytes that arrived on it (noq may acknowledge one path's packets on another).
fn noq_path_stats(conn: &noq::Connection, paths: usize) -> Value {
    (0..paths)
        .filter_map(|k| {
            let id = noq::PathId::ZERO.saturating_add(u32::try_from(k).ok()?);
            let stats = conn.path_stats(id)?;
            Some(json!({
                "path": k,
                "rtt_ms": stats.rtt.as_secs_f64() * 1e3,
                "path_acks_received": stats.frame_rx.path_acks,
                "acks_received": stats.frame_rx.acks,
                "udp_rx_datagrams": stats.udp_rx.datagrams,
                "udp_tx_bytes": stats.udp_tx.bytes,
            }))
        })
        .collect()
}

fn stream_socket(kernel: Kernel, cc: Option<&str>) -> Result<socket2::Socket, BoxError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = match kernel {
        Kernel::Mptcp => Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::MPTCP))
            .map_err(|e| format!("cannot open an MPTCP socket (is net.mptcp.enabled 1?): {e}"))?,
        Kernel::Tcp => Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?,
    };
    if let Some(cc) = cc {
        socket
            .set_tcp_congestion(cc.as_bytes())
            .map_err(|e| format!("TCP_CONGESTION {cc}: {e}"))?;
    }
    // tokio takes the socket over.
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// Serves one transfer and prints a JSON line with what arrived when.
async fn stream_server(kernel: Kernel, server: &StreamServer) -> Result<(), BoxError> {
    let socket = stream_socket(kernel, server.cc.as_deref())?;
    socket.set_reuse_address(true)?;
    socket.bind(&server.listen.into())?;
    socket.listen(1)?;
    let listener = tokio::net::TcpListener::from_std(socket.into())?;
    listening(server.listen);
    let (mut stream, _) = listener.accept().await?;
    let (mut recv, mut send) = stream.split();
    let hashed = hash_stream(&mut recv, &mut send).await?;
    println!(
        "{}",
        json!({ "role": "server", "bytes": hashed.bytes, "arrivals": hashed.arrivals.json() })
    );
    // Until the client has read the digest and closed.
    let _ = tokio::time::timeout(LINGER, recv.read(&mut [0u8; 1])).await;
    Ok(())
}

async fn stream_client(kernel: Kernel, client: &StreamClient) -> Result<(), BoxError> {
    let socket = stream_socket(kernel, client.cc.as_deref())?;
    let socket = tokio::net::TcpSocket::from_std_stream(socket.into());
    let mut stream = socket.connect(client.remote).await?;
    let (mut recv, mut send) = stream.split();
    send_and_check(&mut send, &mut recv, client.size, client.duration, || {
        Value::Null
    })
    .await
}
