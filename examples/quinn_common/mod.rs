//! What `quinn_client` and `quinn_server` share, as quinn's examples share `examples/common`:
//! the ALPN both ends speak and the way each `main` starts and ends.

/// The ALPN of quinn's HTTP/0.9 examples.
pub const ALPN_QUIC_HTTP: &[&[u8]] = &[b"hq-29"];

/// Logs as `RUST_LOG` says, runs the example and exits with 1 on an error (as quinn's `main`s do).
pub fn main(run: impl FnOnce() -> anyhow::Result<()>) {
    tracing::subscriber::set_global_default(
        tracing_subscriber::FmtSubscriber::builder()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .finish(),
    )
    .unwrap();
    let code = {
        if let Err(e) = run() {
            eprintln!("ERROR: {e}");
            1
        } else {
            0
        }
    };
    ::std::process::exit(code);
}
