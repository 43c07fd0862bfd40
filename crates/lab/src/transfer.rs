//! A sha256-checked one-stream transfer: the lab's `bulk` and `soak`, the peers' quinn, noq and
//! MPTCP harnesses, and `benches/loopback.rs` all run this code.
//!
//! The client writes `len` bytes of deterministic pseudo-random data on one stream and finishes
//! it; the server hashes what arrives and answers with the 32-byte sha256 digest. The stream
//! functions are generic over tokio's `AsyncWrite`/`AsyncRead`, so mpquic's streams and plain
//! quinn's run exactly the same code.

use std::collections::BTreeMap;
use std::error::Error;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpquic_core::sim::{Payload, BLOCK};
use mpquic_core::{ClientConfig, Config, Connection, Endpoint, PathConfig};
use rustls::pki_types::CertificateDer;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Any error, sendable across tasks.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// Writes the rest of `payload` to the file `path` (tquic serves it from there).
pub fn write_payload(mut payload: Payload, path: &Path) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut buf = Vec::with_capacity(BLOCK);
    while payload.next_block(&mut buf) {
        file.write_all(&buf)?;
    }
    file.flush()
}

/// How a client writes its payload.
#[derive(Debug, Clone, Copy, Default)]
pub struct Writing {
    /// At most this many bits per second (block by block).
    pub rate_bps: Option<u64>,
    /// Stops at the first block's end after this long, even with bytes left (a transfer for a
    /// time rather than a size).
    pub for_at_most: Option<Duration>,
}

/// Client side: writes the payload on `send` as `writing` says, finishes it, and returns the
/// digest the server answers on `recv` with the bytes written (all of them, unless
/// [`Writing::for_at_most`] cut the payload short: then the payload's first bytes, whose
/// digest is [`Payload::digest`] of that length, as every block but the last is whole).
pub async fn send_payload<W, R>(
    send: &mut W,
    recv: &mut R,
    seed: u64,
    len: u64,
    writing: Writing,
) -> Result<(Vec<u8>, u64), BoxError>
where
    W: AsyncWrite + Unpin,
    R: AsyncRead + Unpin,
{
    let mut payload = Payload::new(seed, len);
    let mut buf = Vec::with_capacity(BLOCK);
    let start = tokio::time::Instant::now();
    let mut written = 0u64;
    while payload.next_block(&mut buf) {
        if let Some(rate) = writing.rate_bps.filter(|r| *r > 0) {
            let due = Duration::from_secs_f64(written as f64 * 8.0 / rate as f64);
            tokio::time::sleep_until(start + due).await;
        }
        send.write_all(&buf).await?;
        written += buf.len() as u64;
        if writing.for_at_most.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
    }
    send.shutdown().await?;
    let mut digest = Vec::with_capacity(32);
    recv.take(64).read_to_end(&mut digest).await?;
    Ok((digest, written))
}

/// Whether `digest` is the server's answer for the `written` bytes of a payload whose whole
/// digest is `expected` (computed before the transfer, so that hashing is not timed).
pub fn digest_matches(
    digest: &[u8],
    expected: &[u8; 32],
    seed: u64,
    len: u64,
    written: u64,
) -> bool {
    if written == len {
        digest == expected
    } else {
        digest == Payload::digest(seed, written)
    }
}

/// What the server side of a transfer received.
pub struct Hashed {
    /// Bytes received.
    pub bytes: u64,
    /// Their sha256.
    pub digest: [u8; 32],
    /// When the first bytes arrived.
    pub first_read: Option<Instant>,
    /// The longest time between two reads that returned bytes, and when it began.
    pub longest_gap: Option<(Duration, Instant)>,
    /// When the bytes arrived.
    pub arrivals: Arrivals,
}

/// Bytes received in each [`Arrivals::BIN`] from the first read on, and when that read was on
/// the wall clock, so that two transfers' arrivals can be laid side by side.
#[derive(Debug, Clone, Default)]
pub struct Arrivals {
    /// Milliseconds since the Unix epoch at the first read.
    pub first_unix_ms: Option<f64>,
    /// Bytes per bin.
    pub bytes: Vec<u64>,
}

impl Arrivals {
    /// The width of a bin.
    pub const BIN: Duration = Duration::from_millis(100);

    fn record(&mut self, since_first: Duration, bytes: u64) {
        let bin =
            usize::try_from(since_first.as_millis() / Self::BIN.as_millis()).unwrap_or(usize::MAX);
        if bin >= self.bytes.len() {
            self.bytes.resize(bin.saturating_add(1), 0);
        }
        if let Some(b) = self.bytes.get_mut(bin) {
            *b += bytes;
        }
    }

    /// As the JSON of a report line.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "first_unix_ms": self.first_unix_ms,
            "bin_ms": Self::BIN.as_millis() as u64,
            "bytes": self.bytes,
        })
    }
}

/// Server side: hashes everything `recv` delivers, answers the digest on `send` and finishes it.
pub async fn hash_stream<R, W>(recv: &mut R, send: &mut W) -> Result<Hashed, BoxError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; BLOCK];
    let mut bytes = 0u64;
    let (mut first_read, mut last_read) = (None, None);
    let mut longest_gap: Option<(Duration, Instant)> = None;
    let mut arrivals = Arrivals::default();
    loop {
        let n = recv.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        let now = Instant::now();
        let first = *first_read.get_or_insert_with(|| {
            arrivals.first_unix_ms = Some(unix_ms());
            now
        });
        arrivals.record(now - first, n as u64);
        if let Some(last) = last_read.replace(now) {
            let gap = now - last;
            if longest_gap.is_none_or(|(longest, _)| gap > longest) {
                longest_gap = Some((gap, last));
            }
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    let digest: [u8; 32] = hasher.finalize().into();
    send.write_all(&digest).await?;
    send.shutdown().await?;
    Ok(Hashed {
        bytes,
        digest,
        first_read,
        longest_gap,
        arrivals,
    })
}

/// Now, in milliseconds since the Unix epoch.
pub fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// An mpquic client connected to `remotes[0]` from `locals[0]`, with one more path from each
/// further local address (path `k` goes to `remotes[k % remotes.len()]`).
pub async fn connect_paths(
    config: Config,
    cert: CertificateDer<'static>,
    locals: &[SocketAddr],
    remotes: &[SocketAddr],
) -> Result<(Endpoint, Connection), BoxError> {
    let (first_local, first_remote) = match (locals.first(), remotes.first()) {
        (Some(l), Some(r)) => (*l, *r),
        _ => return Err("need at least one local and one remote address".into()),
    };
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert)?;
    let mut tls = ClientConfig::with_root_certificates(Arc::new(roots))?;
    tls.transport_config(Arc::new(config));
    let mut endpoint = Endpoint::client(first_local)?;
    endpoint.set_default_client_config(tls);
    let conn = endpoint.connect(first_remote, "localhost")?.await?;
    for (k, local) in locals.iter().enumerate().skip(1) {
        let remote = remotes[k % remotes.len()];
        conn.open_path(&PathConfig::new(*local, remote)).await?;
    }
    Ok((endpoint, conn))
}

/// What the client of one mpquic transfer saw.
pub struct Sent {
    /// Time from opening the stream to the server's digest.
    pub elapsed: Duration,
    /// Bytes written (fewer than asked if [`Writing::for_at_most`] cut the transfer short).
    pub bytes: u64,
    /// Whether the server's digest equals the payload's.
    pub matched: bool,
    /// Stream bytes sent per path (path id -> bytes, re-sends included).
    pub per_path: BTreeMap<u32, u64>,
}

/// Sends `len` bytes from `seed` on a new stream with a size hint, written as `writing` says,
/// and checks the answer against `expected` (see [`Payload::digest`] and [`digest_matches`]).
pub async fn send_checked(
    conn: &Connection,
    seed: u64,
    len: u64,
    expected: &[u8; 32],
    writing: Writing,
) -> Result<Sent, BoxError> {
    let start = Instant::now();
    let (mut send, mut recv) = conn.open_bi().await?;
    send.set_size_hint(len)?;
    let (digest, written) = send_payload(&mut send, &mut recv, seed, len, writing).await?;
    let elapsed = start.elapsed();
    Ok(Sent {
        elapsed,
        bytes: written,
        matched: digest_matches(&digest, expected, seed, len, written),
        per_path: send
            .path_bytes()
            .into_iter()
            .map(|(path, bytes)| (path.0, bytes))
            .collect(),
    })
}

/// Serves one stream of an mpquic session: hashes it and answers the digest.
pub async fn serve_checked(conn: &Connection) -> Result<Hashed, BoxError> {
    let (mut send, mut recv) = conn.accept_bi().await?;
    hash_stream(&mut recv, &mut send).await
}

/// `100MB`, `10MiB`, `1.5GB`, `12345`: decimal (kB, MB, GB) and binary (KiB, MiB, GiB) units,
/// case-insensitive; a bare number is bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        other => return Err(format!("unknown size unit {other:?} in {text:?}")),
    };
    if let Ok(n) = number.parse::<u64>() {
        return n
            .checked_mul(scale)
            .ok_or_else(|| format!("size {text:?} too large"));
    }
    let n: f64 = number
        .parse()
        .map_err(|_| format!("not a size: {text:?} (e.g. 100MB, 10MiB, 12345)"))?;
    let bytes = (n * scale as f64).round();
    if !(0.0..=u64::MAX as f64).contains(&bytes) {
        return Err(format!("size {text:?} out of range"));
    }
    Ok(bytes as u64)
}

/// `120s`, `500ms`, `2m`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 1.0)
    };
    let n: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("not a duration: {text:?} (e.g. 120s, 500ms, 2m)"))?;
    Duration::try_from_secs_f64(n * scale).map_err(|e| format!("duration {text:?}: {e}"))
}

/// Megabits per second for `bytes` in `elapsed`.
pub fn mbps(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 * 8.0 / elapsed.as_secs_f64().max(1e-9) / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED_FOR_TESTS: u64 = 7;

    /// Sends `len` bytes over an in-memory pipe to [`hash_stream`], written as `writing` says.
    async fn through_a_pipe(len: u64, writing: Writing) -> (bool, u64, Hashed) {
        let (client, server) = tokio::io::duplex(BLOCK);
        let (mut client_recv, mut client_send) = tokio::io::split(client);
        let (mut server_recv, mut server_send) = tokio::io::split(server);
        let served = tokio::spawn(async move {
            hash_stream(&mut server_recv, &mut server_send)
                .await
                .unwrap()
        });
        let expected = Payload::digest(SEED_FOR_TESTS, len);
        let (digest, written) = send_payload(
            &mut client_send,
            &mut client_recv,
            SEED_FOR_TESTS,
            len,
            writing,
        )
        .await
        .unwrap();
        let matched = digest_matches(&digest, &expected, SEED_FOR_TESTS, len, written);
        (matched, written, served.await.unwrap())
    }

    #[tokio::test]
    async fn a_transfer_for_a_time_sends_whole_blocks_that_the_digest_still_checks() {
        let len = 10 * BLOCK as u64 + 5;
        let (matched, written, hashed) = through_a_pipe(len, Writing::default()).await;
        assert!(matched);
        assert_eq!((written, hashed.bytes), (len, len));
        assert_eq!(hashed.arrivals.bytes.iter().sum::<u64>(), len);

        let cut = Writing {
            rate_bps: None,
            for_at_most: Some(Duration::ZERO),
        };
        let (matched, written, hashed) = through_a_pipe(len, cut).await;
        assert!(matched, "the digest of the blocks written");
        assert_eq!((written, hashed.bytes), (BLOCK as u64, BLOCK as u64));
    }
}
