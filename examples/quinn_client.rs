//! quinn's `examples/client.rs` (quinn 0.11, MIT or Apache-2.0 like this project), ported to
//! mpquic: an HTTP/0.9 client that fetches one file, now over two paths. Run `quinn_server`
//! first, then `cargo run --example quinn_client -- --host localhost https://127.0.0.1:4433/Cargo.toml`.
//!
//! What changed from quinn's file, besides this comment:
//! - the types: `quinn::{ClientConfig, Endpoint}` are `mpquic::{ClientConfig, Endpoint}`, and
//!   `QuicClientConfig` comes through `mpquic::crypto` (the same type, re-exported);
//! - one `open_path` call: a second path from `--second-bind` (quinn's `--rebind`, which moved
//!   the connection to a new socket, is gone: a second path is what multipath does instead);
//! - the server's certificate is read from the system's temporary directory instead of a
//!   `directories-next` data directory (one dependency less).
//!
//! The rustls set-up (roots, ALPN, key logging) is quinn's, unchanged.

use std::{
    fs,
    io::{self, Write},
    net::{SocketAddr, ToSocketAddrs},
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{anyhow, Result};
use clap::Parser;
use mpquic::crypto::rustls::QuicClientConfig;
use mpquic::PathConfig;
use rustls::pki_types::CertificateDer;
use tracing::{error, info};
use url::Url;

mod quinn_common;

/// HTTP/0.9 over QUIC client
#[derive(Parser, Debug)]
#[clap(name = "client")]
struct Opt {
    /// Perform NSS-compatible TLS key logging to the file specified in `SSLKEYLOGFILE`.
    #[clap(long = "keylog")]
    keylog: bool,

    url: Url,

    /// Override hostname used for certificate verification
    #[clap(long = "host")]
    host: Option<String>,

    /// Custom certificate authority to trust, in DER format
    #[clap(long = "ca")]
    ca: Option<PathBuf>,

    /// Address to bind on
    #[clap(long = "bind", default_value = "127.0.0.1:0")]
    bind: SocketAddr,

    /// Address the second path is bound on
    #[clap(long = "second-bind", default_value = "127.0.0.2:0")]
    second_bind: SocketAddr,
}

fn main() {
    let opt = Opt::parse();
    quinn_common::main(|| run(opt));
}

#[tokio::main]
async fn run(options: Opt) -> Result<()> {
    let url = options.url;
    let url_host = strip_ipv6_brackets(url.host_str().unwrap());
    let remote = (url_host, url.port().unwrap_or(4433))
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| anyhow!("couldn't resolve to an address"))?;

    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca_path) = options.ca {
        roots.add(CertificateDer::from(fs::read(ca_path)?))?;
    } else {
        let dir = std::env::temp_dir().join("mpquic-examples");
        match fs::read(dir.join("cert.der")) {
            Ok(cert) => {
                roots.add(CertificateDer::from(cert))?;
            }
            Err(ref e) if e.kind() == io::ErrorKind::NotFound => {
                info!("local server certificate not found");
            }
            Err(e) => {
                error!("failed to open local server certificate: {}", e);
            }
        }
    }
    let mut client_crypto = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();

    client_crypto.alpn_protocols = quinn_common::ALPN_QUIC_HTTP
        .iter()
        .map(|&x| x.into())
        .collect();
    if options.keylog {
        client_crypto.key_log = Arc::new(rustls::KeyLogFile::new());
    }

    let client_config =
        mpquic::ClientConfig::new(Arc::new(QuicClientConfig::try_from(client_crypto)?));
    let mut endpoint = mpquic::Endpoint::client(options.bind)?;
    endpoint.set_default_client_config(client_config);

    let request = format!("GET {}\r\n", url.path());
    let start = Instant::now();
    let host = options.host.as_deref().unwrap_or(url_host);

    eprintln!("connecting to {host} at {remote}");
    let conn = endpoint
        .connect(remote, host)?
        .await
        .map_err(|e| anyhow!("failed to connect: {}", e))?;
    eprintln!("connected at {:?}", start.elapsed());
    // mpquic: a second path to the same server, from another local address.
    conn.open_path(&PathConfig::new(options.second_bind, remote))
        .await
        .map_err(|e| anyhow!("failed to open a second path: {}", e))?;
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .map_err(|e| anyhow!("failed to open stream: {}", e))?;

    send.write_all(request.as_bytes())
        .await
        .map_err(|e| anyhow!("failed to send request: {}", e))?;
    send.finish().unwrap();
    let response_start = Instant::now();
    eprintln!("request sent at {:?}", response_start - start);
    let resp = recv
        .read_to_end(usize::MAX)
        .await
        .map_err(|e| anyhow!("failed to read response: {}", e))?;
    let duration = response_start.elapsed();
    eprintln!(
        "response received in {:?} - {} KiB/s",
        duration,
        resp.len() as f32 / (duration_secs(&duration) * 1024.0)
    );
    io::stdout().write_all(&resp).unwrap();
    io::stdout().flush().unwrap();
    conn.close(0u32.into(), b"done");

    // Give the server a fair chance to receive the close packet
    endpoint.wait_idle().await;

    Ok(())
}

fn strip_ipv6_brackets(host: &str) -> &str {
    // An ipv6 url looks like eg https://[::1]:4433/Cargo.toml, wherein the host [::1] is the
    // ipv6 address ::1 wrapped in brackets, per RFC 2732. This strips those.
    if host.starts_with('[') && host.ends_with(']') {
        &host[1..host.len() - 1]
    } else {
        host
    }
}

fn duration_secs(x: &Duration) -> f32 {
    x.as_secs() as f32 + x.subsec_nanos() as f32 * 1e-9
}
