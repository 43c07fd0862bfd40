//! Serves recorded pages over HTTP/3 over mpquic.
//!
//! ```text
//! cargo run --release -p mpquic-lab --bin page_server -- --har pages/ --listen 127.0.0.1:4433
//! ```
//!
//! Every recorded URL of every page (a HAR file, or each `.har` file of a directory; default
//! the repository's `pages/`) answers `GET /{page}/{host}{path}` with 200, a body of exactly
//! its recorded transfer size, its recorded content type and its recorded RFC 9218 `priority`;
//! anything else is a 404. Each response's urgency (from the request's `priority` header) and
//! size go to the multipath stream before its body, so the scheduler (`--scheduler`) knows
//! both. The certificate is self-signed for `localhost` and written to `--cert` (DER) for
//! `page_client --remote`. It serves until killed, or `--sessions` sessions (0: no end).
//!
//! `--transport quinn` serves the same responses over plain quinn (HTTP/3 through h3-quinn) on
//! one `--listen` address, for `page_client --remote ADDR --transport quinn`: the baseline,
//! with no urgency or size reaching the transport (h3-quinn gives no way to).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use mpquic_core::{Endpoint, ServerConfig};
use mpquic_replay::{har, quinn_server, self_signed, transport_config, PageServer, Transport};

use crate::transfer::BoxError;

/// How an end is set up: `page_server`'s own, and `page_client`'s at both ends.
#[derive(Debug, Clone, clap::Args)]
pub struct EndFlags {
    /// Congestion controller of every path, as `mpquic_core::CongestionControl` parses it:
    /// bbr, cubic-hystart, cubic (quinn's), fld, ...
    #[arg(long, default_value = mpquic_core::CongestionControl::DEFAULT_NAME)]
    pub cc: String,
    /// Turns off mpquic's delivery reports (`Config::delivery_reports`).
    #[arg(long)]
    pub no_delivery_reports: bool,
    /// Turns off mpquic's re-injection (`Config::reinjection`).
    #[arg(long)]
    pub no_reinjection: bool,
    /// The page server does not tell the transport what each response leads to
    /// (`PageServer::dependency_hints`).
    #[arg(long)]
    pub no_dependency_hints: bool,
}

impl EndFlags {
    /// The flags as a command line gives them.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["--cc".to_owned(), self.cc.clone()];
        let switches = [
            (self.no_delivery_reports, "--no-delivery-reports"),
            (self.no_reinjection, "--no-reinjection"),
            (self.no_dependency_hints, "--no-dependency-hints"),
        ];
        args.extend(
            switches
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, flag)| (*flag).to_owned()),
        );
        args
    }
}

/// Where and how a page server serves.
pub struct Serving<'a> {
    /// Listening addresses (quinn: exactly one).
    pub listen: &'a [SocketAddr],
    /// mpquic or plain quinn.
    pub transport: Transport,
    /// mpquic's scheduler.
    pub scheduler: &'a str,
    /// How the server end is set up.
    pub flags: &'a EndFlags,
    /// Where its self-signed certificate (DER) goes.
    pub cert: &'a Path,
    /// Sessions to serve before returning (`None`: until killed).
    pub sessions: Option<u64>,
}

/// Serves with `server` as `serving` says. Once the endpoint is bound it writes the certificate
/// (a client may start when it is there) and calls `bound` with what it serves, where and how
/// (`N objects on ADDRS with SCHEDULER`).
pub async fn serve(
    server: PageServer,
    serving: &Serving<'_>,
    bound: impl FnOnce(&str),
) -> Result<(), BoxError> {
    let (cert, key) = self_signed()?;
    let write_cert = || {
        std::fs::write(serving.cert, cert.as_ref())
            .map_err(|e| format!("cannot write {}: {e}", serving.cert.display()))
    };
    let congestion = serving.flags.cc.parse()?;
    if serving.transport == Transport::Quinn {
        let [addr] = serving.listen[..] else {
            return Err("quinn listens on one address".into());
        };
        let endpoint = quinn_server(addr, cert.clone(), key, &congestion)?;
        write_cert()?;
        bound(&format!(
            "{} objects on {} over plain quinn",
            server.len(),
            endpoint.local_addr()?
        ));
        server.run_quinn(&endpoint, serving.sessions).await;
        return Ok(());
    }
    let config = transport_config(
        serving.scheduler,
        serving.listen.len(),
        &congestion,
        !serving.flags.no_delivery_reports,
        !serving.flags.no_reinjection,
    )?;
    let mut tls = ServerConfig::with_single_cert(vec![cert.clone()], key)?;
    tls.transport_config(Arc::new(config));
    let endpoint = Endpoint::new(serving.listen, Some(tls))?;
    write_cert()?;
    bound(&format!(
        "{} objects on {:?} with {}",
        server.len(),
        endpoint.local_addrs(),
        serving.scheduler
    ));
    server.run(&endpoint, serving.sessions).await;
    Ok(())
}

/// The command line of `page_server`.
#[derive(Debug, Parser)]
#[command(about = "Serves recorded pages (HAR) over HTTP/3 over mpquic")]
pub struct Args {
    /// A HAR file or a directory of them.
    #[arg(long, default_value = "pages")]
    har: PathBuf,
    /// Listening addresses, comma-separated (one is enough: every path can reach it).
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:4433")]
    listen: Vec<SocketAddr>,
    /// Transport: mpquic, or quinn (plain quinn with h3-quinn, on one --listen address).
    #[arg(long, default_value = "mpquic")]
    transport: String,
    /// Scheduler: priority-bucket, priority-bucket-paper, lrf, sa-ecf, wrr, sec, round-robin
    /// (mpquic only).
    #[arg(long, default_value = "priority-bucket")]
    scheduler: String,
    /// Where to write the self-signed certificate (DER) for clients.
    #[arg(long, default_value = "/tmp/mpquic-page-cert.der")]
    cert: PathBuf,
    /// Sessions to serve before exiting (0: until killed).
    #[arg(long, default_value_t = 0)]
    sessions: u64,
    #[command(flatten)]
    flags: EndFlags,
}

async fn run(args: Args) -> Result<(), BoxError> {
    let pages = har::load_all(&args.har)?;
    for page in &pages {
        println!(
            "{}: {} objects, {} bytes, first {}",
            page.id,
            page.objects.len(),
            page.total_bytes(),
            page.objects.first().map_or("-", |o| o.key.as_str())
        );
    }
    let serving = Serving {
        listen: &args.listen,
        transport: args.transport.parse()?,
        scheduler: &args.scheduler,
        flags: &args.flags,
        cert: &args.cert,
        sessions: (args.sessions > 0).then_some(args.sessions),
    };
    let server = PageServer::new(&pages)?.dependency_hints(!args.flags.no_dependency_hints);
    serve(server, &serving, |what| {
        println!("serving {what} (certificate in {})", args.cert.display());
    })
    .await
}

/// Runs `page_server` with `args` until it has served its sessions (or is killed).
pub async fn main(args: Args) -> ExitCode {
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("page_server: {e}");
            ExitCode::FAILURE
        }
    }
}
