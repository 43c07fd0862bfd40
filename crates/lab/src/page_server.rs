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
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use mpquic_core::Endpoint;
use mpquic_replay::{har, quinn_server, self_signed, transport_config, PageServer, Transport};

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
    /// Congestion controller of every path, as `mpquic_core::CongestionControl` parses it: bbr,
    /// cubic-hystart, cubic (quinn's), fld, ...
    #[arg(long, default_value = mpquic_core::CongestionControl::DEFAULT_NAME)]
    cc: String,
    /// Turns off mpquic's delivery reports (`Config::delivery_reports`).
    #[arg(long)]
    no_delivery_reports: bool,
    /// Turns off mpquic's re-injection (`Config::reinjection`).
    #[arg(long)]
    no_reinjection: bool,
    /// Does not tell the transport what each response leads to
    /// (`PageServer::dependency_hints`).
    #[arg(long)]
    no_dependency_hints: bool,
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let pages = har::load_all(&args.har)?;
    let server = PageServer::new(&pages)?.dependency_hints(!args.no_dependency_hints);
    let limit = (args.sessions > 0).then_some(args.sessions);
    let (cert, key) = self_signed()?;
    std::fs::write(&args.cert, cert.as_ref())
        .map_err(|e| format!("cannot write {}: {e}", args.cert.display()))?;
    for page in &pages {
        println!(
            "{}: {} objects, {} bytes, first {}",
            page.id,
            page.objects.len(),
            page.total_bytes(),
            page.objects[0].key
        );
    }
    if args.transport.parse::<Transport>()? == Transport::Quinn {
        let [addr] = args.listen[..] else {
            return Err("--transport quinn listens on one address".into());
        };
        let endpoint = quinn_server(addr, cert, key, &args.cc.parse()?)?;
        println!(
            "serving {} objects on {} over plain quinn (certificate in {})",
            server.len(),
            endpoint.local_addr()?,
            args.cert.display()
        );
        server.run_quinn(&endpoint, limit).await;
        return Ok(());
    }
    let config = transport_config(
        &args.scheduler,
        8,
        &args.cc.parse()?,
        !args.no_delivery_reports,
        !args.no_reinjection,
    )?;
    let endpoint = Endpoint::server(&args.listen, config, vec![cert], key)?;
    println!(
        "serving {} objects on {:?} with {} (certificate in {})",
        server.len(),
        endpoint.local_addrs(),
        args.scheduler,
        args.cert.display()
    );
    server.run(&endpoint, limit).await;
    Ok(())
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
