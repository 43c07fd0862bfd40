//! One command, one measurement: a page server, the emulated links of a scenario and a page
//! client, all in this process; over mpquic, or over plain quinn on one path as the baseline.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;

use mpquic_core::{
    ClientConfig, Config, CongestionControl, Connection, Endpoint, PathConfig, ReinjectionConfig,
    SelfSigned, ServerConfig, VarInt,
};
use mpquic_netns::loopback::relay_paths;
use mpquic_netns::relay::{PathStats, Relay};
use mpquic_scenario::Scenario;
use mpquic_sched::meh::{paths_for_page, MehError, MehModel, NetworkCondition, PagePlan};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::client::{load, load_quinn, LoadOptions, Transport};
use crate::error::RunError;
use crate::page::Page;
use crate::plain::{quinn_connect, quinn_server};
use crate::report::{LinkDrops, LoadReport};
use crate::server::PageServer;

/// Where the emulated links run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A userspace link emulator as a UDP relay per path on loopback (no root).
    Loopback,
    /// The namespace testbed (root): server and client as processes in their namespaces.
    Netns,
}

impl Mode {
    /// Its name on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Loopback => "loopback",
            Self::Netns => "netns",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = RunError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "loopback" => Ok(Self::Loopback),
            "netns" => Ok(Self::Netns),
            other => Err(RunError::Mode(other.to_owned())),
        }
    }
}

impl FromStr for Transport {
    type Err = RunError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "mpquic" => Ok(Self::Mpquic),
            "quinn" => Ok(Self::Quinn),
            other => Err(RunError::Transport(other.to_owned())),
        }
    }
}

/// What to run: transport, scheduler, emulated links, paths, bound.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// mpquic or the plain-quinn baseline.
    pub transport: Transport,
    /// The scheduler both ends use, by name (mpquic only).
    pub scheduler: String,
    /// The emulated links.
    pub scenario: &'static Scenario,
    /// How many of the scenario's paths mpquic uses (its first ones), unless [`Self::path`]
    /// is set. quinn uses one path.
    pub paths: usize,
    /// One of the scenario's paths by index (from 0), alone: single-path mpquic on it, or
    /// quinn's path. `None`: mpquic uses the first [`Self::paths`], quinn the scenario's
    /// better path ([`better_path`]).
    pub path: Option<usize>,
    /// Where the links run.
    pub mode: Mode,
    /// The longest a load may take, and how recorded times are paced.
    pub load: LoadOptions,
    /// The congestion controller of both ends' paths.
    pub congestion: CongestionControl,
    /// Whether both ends send and use delivery reports ([`Config::delivery_reports`]).
    pub delivery_reports: bool,
    /// Whether both ends re-inject ([`Config::reinjection`]: the default, or none at all).
    pub reinjection: bool,
    /// Whether the page server tells the transport what each response leads to
    /// ([`PageServer::dependency_hints`]).
    pub dependency_hints: bool,
    /// Which random losses the emulated links draw
    /// ([`mpquic_scenario::link::LinkConfig::of_path`]): loads with the same seed see the same
    /// loss sequence on every path, loads with different seeds independent ones.
    pub loss_seed: u64,
}

impl RunConfig {
    /// Both ends' mpquic settings for this run ([`transport_config`]).
    pub fn mpquic_config(&self) -> Result<Config, RunError> {
        transport_config(
            &self.scheduler,
            self.paths,
            &self.congestion,
            self.delivery_reports,
            self.reinjection,
        )
    }

    /// `scheduler` over every path of the scenario called `scenario`, on loopback, with the
    /// default [`LoadOptions`] (60 s bound, recorded times).
    ///
    /// # Errors
    /// [`RunError::Scenario`] for an unknown scenario.
    pub fn new(scheduler: &str, scenario: &str) -> Result<Self, RunError> {
        let scenario = Scenario::by_name(scenario)?;
        Ok(Self {
            transport: Transport::Mpquic,
            scheduler: scheduler.to_owned(),
            scenario,
            paths: scenario.paths.len(),
            path: None,
            mode: Mode::Loopback,
            load: LoadOptions::default(),
            congestion: CongestionControl::default(),
            delivery_reports: true,
            reinjection: true,
            dependency_hints: true,
            loss_seed: 0,
        })
    }

    /// The scenario's paths this run uses, by index: [`Self::path`] alone when set, else
    /// mpquic's first [`Self::paths`] or quinn's [`better_path`].
    ///
    /// # Errors
    /// [`RunError::Path`] for an index the scenario does not have, [`RunError::Paths`] for a
    /// path count of 0 or more than it has.
    pub fn path_indices(&self) -> Result<Vec<usize>, RunError> {
        let available = self.scenario.paths.len();
        match (self.path, self.transport) {
            (Some(k), _) if k >= available => Err(RunError::Path {
                scenario: self.scenario.name,
                available,
                asked: k,
            }),
            (Some(k), _) => Ok(vec![k]),
            (None, Transport::Quinn) => Ok(vec![better_path(self.scenario)]),
            (None, Transport::Mpquic) if self.paths == 0 || self.paths > available => {
                Err(RunError::Paths {
                    scenario: self.scenario.name,
                    available,
                    asked: self.paths,
                })
            }
            (None, Transport::Mpquic) => Ok((0..self.paths).collect()),
        }
    }
}

/// The index of `scenario`'s better path, the one plain quinn uses by default: the highest
/// configured rate, ties broken by the lower round-trip time, then by the lower index.
pub fn better_path(scenario: &Scenario) -> usize {
    scenario
        .paths
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| {
            b.rate_bps
                .cmp(&a.rate_bps)
                .then(a.one_way_delay.cmp(&b.one_way_delay))
        })
        .map_or(0, |(k, _)| k)
}

/// A self-signed certificate for `localhost` ([`SelfSigned`]) and its key.
///
/// # Errors
/// [`RunError::Certificate`] if it cannot be made.
pub fn self_signed() -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), RunError> {
    let certificate =
        SelfSigned::new(&["localhost"]).map_err(|e| RunError::Certificate(e.to_string()))?;
    Ok((certificate.cert_der(), certificate.key_der()))
}

/// The transport configuration for `scheduler` and `congestion` over `paths` paths, with or
/// without delivery reports, and with the default re-injection or none.
///
/// # Errors
/// [`RunError::Config`] for an unknown scheduler.
pub fn transport_config(
    scheduler: &str,
    paths: usize,
    congestion: &CongestionControl,
    delivery_reports: bool,
    reinjection: bool,
) -> Result<Config, RunError> {
    let mut config = Config::default();
    config
        .scheduler(scheduler.parse()?)
        .max_paths(paths.clamp(8, mpquic_sched::MAX_PATHS))?
        .congestion_control(congestion.clone())
        .delivery_reports(delivery_reports);
    if !reinjection {
        config.reinjection(ReinjectionConfig {
            urgency: None,
            suspect: false,
            ..ReinjectionConfig::default()
        })?;
    }
    Ok(config)
}

/// How many of `scenario`'s paths MEH's model opens for a page of `page_size` bytes, from the
/// paths' configured RTT and rate (what a mobile edge would know): [`mpquic_sched::meh`].
///
/// # Errors
/// [`MehError`] for a zero page or degenerate paths.
pub fn auto_paths(scenario: &Scenario, page_size: u64) -> Result<PagePlan, MehError> {
    let conditions = scenario
        .paths
        .iter()
        .map(|p| NetworkCondition::from_bits_per_sec(2 * p.one_way_delay, p.rate_bps as f64))
        .collect::<Result<Vec<_>, _>>()?;
    paths_for_page(&MehModel::default(), page_size, &conditions)
}

/// Path `k`'s local address on loopback, 127.0.0.(k+1) with any port.
pub fn loopback_local(k: usize) -> SocketAddr {
    let host = u8::try_from(k + 1).unwrap_or(u8::MAX);
    SocketAddr::from((Ipv4Addr::new(127, 0, 0, host), 0))
}

/// Connects a client to `remotes[k]` from `locals[k]`, one path each.
///
/// # Errors
/// [`RunError::Connect`] when a handshake or join fails or the lists differ in length;
/// [`RunError::Config`] when binding does.
pub async fn connect(
    config: Config,
    cert: CertificateDer<'static>,
    locals: &[SocketAddr],
    remotes: &[SocketAddr],
) -> Result<(Endpoint, Connection), RunError> {
    let (Some(&first), Some(&first_local)) = (remotes.first(), locals.first()) else {
        return Err(RunError::Connect("no server address".into()));
    };
    if locals.len() != remotes.len() {
        return Err(RunError::Connect(format!(
            "{} local addresses for {} server addresses",
            locals.len(),
            remotes.len()
        )));
    }
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(cert)
        .map_err(|e| RunError::Certificate(e.to_string()))?;
    let mut tls = ClientConfig::with_root_certificates(Arc::new(roots))
        .map_err(|e| RunError::Certificate(e.to_string()))?;
    tls.transport_config(Arc::new(config));
    let mut endpoint = Endpoint::client(first_local)
        .map_err(|e| RunError::Connect(format!("binding {first_local}: {e}")))?;
    endpoint.set_default_client_config(tls);
    let conn = endpoint
        .connect(first, "localhost")
        .map_err(|e| RunError::Connect(e.to_string()))?
        .await
        .map_err(|e| RunError::Connect(e.to_string()))?;
    for (k, (&local, &remote)) in locals.iter().zip(remotes).enumerate().skip(1) {
        conn.open_path(&PathConfig::new(local, remote))
            .await
            .map_err(|e| RunError::Connect(format!("path {k}: {e}")))?;
    }
    Ok((endpoint, conn))
}

/// Checks the mode and the paths of `run`; the scenario paths it uses.
fn check(run: &RunConfig) -> Result<Vec<usize>, RunError> {
    if run.mode == Mode::Netns {
        return Err(RunError::NetnsInProcess);
    }
    run.path_indices()
}

/// A page server running in this process on 127.0.0.1 (any port) over a run's transport, with
/// a fresh self-signed certificate for `localhost`; closed when dropped.
#[derive(Debug)]
pub struct LocalServer {
    addr: SocketAddr,
    cert: CertificateDer<'static>,
    endpoint: ServerEndpoint,
    serving: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
enum ServerEndpoint {
    Mpquic(Arc<Endpoint>),
    Quinn(quinn::Endpoint),
}

impl LocalServer {
    /// Starts `server` over `run`'s transport (mpquic with `run`'s settings, or plain quinn).
    /// Needs a tokio runtime.
    ///
    /// # Errors
    /// [`RunError`]: bad configuration, a certificate or a socket that cannot be made.
    pub fn start(server: PageServer, run: &RunConfig) -> Result<Self, RunError> {
        let (cert, key) = self_signed()?;
        let local = loopback_local(0);
        let endpoint = match run.transport {
            Transport::Mpquic => {
                let mut tls = ServerConfig::with_single_cert(vec![cert.clone()], key)
                    .map_err(|e| RunError::Certificate(e.to_string()))?;
                tls.transport_config(Arc::new(run.mpquic_config()?));
                ServerEndpoint::Mpquic(Arc::new(
                    Endpoint::server(tls, local)
                        .map_err(|e| RunError::Connect(format!("binding {local}: {e}")))?,
                ))
            }
            Transport::Quinn => {
                ServerEndpoint::Quinn(quinn_server(local, cert.clone(), key, &run.congestion)?)
            }
        };
        let (addr, serving) = match &endpoint {
            ServerEndpoint::Mpquic(endpoint) => {
                let endpoint = endpoint.clone();
                let addr = endpoint.local_addr();
                (
                    addr,
                    tokio::spawn(async move { server.run(&endpoint, None).await }),
                )
            }
            ServerEndpoint::Quinn(endpoint) => {
                let endpoint = endpoint.clone();
                let addr = endpoint.local_addr();
                (
                    addr,
                    tokio::spawn(async move { server.run_quinn(&endpoint, None).await }),
                )
            }
        };
        let addr = addr.map_err(|e| RunError::Connect(format!("the server's address: {e}")))?;
        Ok(Self {
            addr,
            cert,
            endpoint,
            serving,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The certificate a client trusts for it.
    pub fn cert(&self) -> CertificateDer<'static> {
        self.cert.clone()
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        match &self.endpoint {
            ServerEndpoint::Mpquic(endpoint) => endpoint.close(VarInt::from_u32(0), b"done"),
            ServerEndpoint::Quinn(endpoint) => endpoint.close(0u32.into(), b"done"),
        }
        self.serving.abort();
    }
}

/// A run's emulated links on loopback: a UDP relay per scenario path in front of a server, and
/// the client's local address for each path the run uses; stopped when dropped.
#[derive(Debug)]
pub struct Links {
    relay: Relay,
    indices: Vec<usize>,
}

impl Links {
    /// Relays for every path of `run`'s scenario to `server`.
    ///
    /// # Errors
    /// [`RunError`]: bad configuration, [`Mode::Netns`], relays that cannot start.
    pub fn start(run: &RunConfig, server: SocketAddr) -> Result<Self, RunError> {
        let indices = check(run)?;
        let servers = vec![server; run.scenario.paths.len()];
        let relay = Relay::start(relay_paths(run.scenario, &[], &servers, run.loss_seed)?)?;
        Ok(Self { relay, indices })
    }

    /// The client's address for each path the run uses, 127.0.0.(k+1) for scenario path k.
    pub fn locals(&self) -> Vec<SocketAddr> {
        self.indices.iter().map(|&k| loopback_local(k)).collect()
    }

    /// The relay front of each path the run uses: where the client sends.
    pub fn fronts(&self) -> Vec<SocketAddr> {
        self.indices
            .iter()
            .map(|&k| self.relay.local_addrs()[k])
            .collect()
    }

    /// What the links dropped so far, by scenario path.
    pub fn drops(&self) -> BTreeMap<usize, LinkDrops> {
        self.relay
            .stats()
            .iter()
            .enumerate()
            .filter(|(k, _)| self.indices.contains(k))
            .map(|(k, path)| (k, LinkDrops::between(&PathStats::default(), path)))
            .collect()
    }
}

/// A client's connection to a page server over a run's transport: what a page is loaded
/// over, by the replay client ([`load_direct`]) or by a browser through a proxy.
#[derive(Debug)]
pub enum Connected {
    /// mpquic, one path per address pair.
    Mpquic {
        /// The client endpoint.
        endpoint: Endpoint,
        /// The connection.
        conn: Connection,
    },
    /// Plain quinn, one path.
    Quinn {
        /// The client endpoint.
        endpoint: quinn::Endpoint,
        /// The connection.
        conn: quinn::Connection,
    },
}

impl Connected {
    /// Connects to a page server reachable at `remotes` (one address per path, path k leaving
    /// from `locals[k]`) whose certificate is `cert`, over `run`'s transport, within `run`'s
    /// load timeout. Plain quinn takes exactly one address each.
    ///
    /// # Errors
    /// [`RunError::Connect`] for set-up failures and the timeout, [`RunError`] for bad
    /// configuration.
    pub async fn open(
        run: &RunConfig,
        locals: &[SocketAddr],
        remotes: &[SocketAddr],
        cert: CertificateDer<'static>,
    ) -> Result<Self, RunError> {
        let timeout = run.load.timeout;
        let late = |_| RunError::Connect(format!("not connected after {timeout:?}"));
        match run.transport {
            Transport::Mpquic => {
                let connecting = connect(run.mpquic_config()?, cert, locals, remotes);
                let (endpoint, conn) = tokio::time::timeout(timeout, connecting)
                    .await
                    .map_err(late)??;
                Ok(Self::Mpquic { endpoint, conn })
            }
            Transport::Quinn => {
                let (&[local], &[remote]) = (locals, remotes) else {
                    return Err(RunError::Connect(format!(
                        "plain quinn uses one path: {} local and {} server addresses given",
                        locals.len(),
                        remotes.len()
                    )));
                };
                let connecting = quinn_connect(local, remote, cert, &run.congestion);
                let (endpoint, conn) = tokio::time::timeout(timeout, connecting)
                    .await
                    .map_err(late)??;
                Ok(Self::Quinn { endpoint, conn })
            }
        }
    }

    /// Closes the connection and its endpoint.
    pub fn close(&self) {
        match self {
            Self::Mpquic { endpoint, conn } => {
                conn.close(VarInt::from_u32(0), b"done");
                endpoint.close(VarInt::from_u32(0), b"done");
            }
            Self::Quinn { endpoint, conn } => {
                conn.close(0u32.into(), b"done");
                endpoint.close(0u32.into(), b"done");
            }
        }
    }
}

/// Loads `page` once: a page server on 127.0.0.1 ([`LocalServer`]), a relay per scenario path
/// in front of it ([`Links`]), and a client whose path k goes from 127.0.0.(k+1) to relay
/// front k, for each path k the run uses ([`RunConfig::path_indices`]; plain quinn: one).
/// Everything is torn down before it returns.
///
/// # Errors
/// [`RunError`]: bad configuration, [`Mode::Netns`], set-up failures, or the load's own.
pub async fn load_page(page: &Page, run: &RunConfig) -> Result<LoadReport, RunError> {
    check(run)?;
    let server =
        PageServer::new(std::slice::from_ref(page))?.dependency_hints(run.dependency_hints);
    let server = LocalServer::start(server, run)?;
    load_remote(page, run, server.addr(), server.cert()).await
}

/// Loads `page` once from a page server already running at `server` (whose certificate is
/// `cert`, and whose transport is `run`'s), through a relay per scenario path on loopback in
/// front of it; the client uses the relays of the paths the run uses.
///
/// # Errors
/// [`RunError`]: bad configuration, [`Mode::Netns`], set-up failures, or the load's own.
pub async fn load_remote(
    page: &Page,
    run: &RunConfig,
    server: SocketAddr,
    cert: CertificateDer<'static>,
) -> Result<LoadReport, RunError> {
    let links = Links::start(run, server)?;
    let mut report = load_direct(page, run, &links.locals(), &links.fronts(), cert).await?;
    report.link_drops = links.drops();
    Ok(report)
}

/// Loads `page` once from a page server reachable at `remotes` (one address per path), path k
/// leaving from `locals[k]`; no emulator of its own (inside the namespace testbed, the
/// testbed's links are on the way). Plain quinn takes exactly one address each.
///
/// # Errors
/// [`RunError`]: set-up failures or the load's own.
pub async fn load_direct(
    page: &Page,
    run: &RunConfig,
    locals: &[SocketAddr],
    remotes: &[SocketAddr],
    cert: CertificateDer<'static>,
) -> Result<LoadReport, RunError> {
    let connected = Connected::open(run, locals, remotes, cert).await?;
    let report = match &connected {
        Connected::Mpquic { conn, .. } => load(conn, page, &run.load).await,
        Connected::Quinn { conn, .. } => load_quinn(conn, page, &run.load).await,
    };
    connected.close();
    Ok(labelled(report?, run))
}

/// `report` with `run`'s scenario and mode.
fn labelled(mut report: LoadReport, run: &RunConfig) -> LoadReport {
    report.scenario = run.scenario.name.to_owned();
    report.mode = run.mode.name().to_owned();
    report
}

/// [`load_page`] `reps` times in a runtime of its own (two worker threads), for programs that
/// are not async; stops at the first failure.
///
/// # Errors
/// [`RunError`] of the first load that failed; [`RunError::Connect`] when the runtime cannot
/// start.
pub fn load_page_blocking(
    page: &Page,
    run: &RunConfig,
    reps: usize,
) -> Result<Vec<LoadReport>, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| RunError::Connect(format!("tokio runtime: {e}")))?;
    runtime.block_on(async {
        let mut reports = Vec::with_capacity(reps);
        for _ in 0..reps {
            reports.push(load_page(page, run).await?);
        }
        Ok(reports)
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mpquic_scenario::PathSpec;

    use super::*;

    const MBIT: u64 = 1_000_000;

    fn scenario(paths: &'static [PathSpec]) -> Scenario {
        Scenario {
            name: "test",
            paths,
            source: "",
        }
    }

    #[test]
    fn better_path_is_the_fastest_then_the_nearest_then_the_first() {
        let by_name = |name| better_path(Scenario::by_name(name).unwrap());
        // pb-high: 10 Mbit/s at 10 ms RTT, 40 Mbit/s at 50 ms.
        assert_eq!(by_name("pb-high"), 1);
        assert_eq!(by_name("sec-high"), 1);
        assert_eq!(by_name("lte"), 0);
        // pb-low: two equal paths.
        assert_eq!(by_name("pb-low"), 0);
        const NEAR: PathSpec = PathSpec::new(20 * MBIT, Duration::from_millis(5));
        const FAR: PathSpec = PathSpec::new(20 * MBIT, Duration::from_millis(30));
        const SLOW: PathSpec = PathSpec::new(5 * MBIT, Duration::from_millis(1));
        assert_eq!(better_path(&scenario(&[SLOW, FAR, NEAR, NEAR])), 2);
        assert_eq!(better_path(&scenario(&[])), 0);
    }

    #[test]
    fn path_indices_follow_transport_and_path() {
        let mut run = RunConfig::new("lrf", "pb-high").unwrap();
        assert_eq!(run.path_indices().unwrap(), [0, 1]);
        run.paths = 1;
        assert_eq!(run.path_indices().unwrap(), [0]);
        run.path = Some(1);
        assert_eq!(run.path_indices().unwrap(), [1]);
        run.transport = Transport::Quinn;
        run.path = None;
        assert_eq!(run.path_indices().unwrap(), [1]);
        run.path = Some(0);
        assert_eq!(run.path_indices().unwrap(), [0]);
    }

    #[test]
    fn a_path_the_scenario_lacks_is_refused_by_name_and_count() {
        for transport in [Transport::Mpquic, Transport::Quinn] {
            let mut run = RunConfig::new("lrf", "pb-high").unwrap();
            run.transport = transport;
            run.path = Some(2);
            let e = run.path_indices().unwrap_err();
            assert!(
                matches!(
                    e,
                    RunError::Path {
                        scenario: "pb-high",
                        available: 2,
                        asked: 2
                    }
                ),
                "{e:?}"
            );
            assert_eq!(e.to_string(), "pb-high has 2 paths (0 to 1); path 2 asked");
        }
        let mut run = RunConfig::new("lrf", "pb-high").unwrap();
        run.paths = 3;
        assert!(matches!(run.path_indices(), Err(RunError::Paths { .. })));
        run.paths = 0;
        assert!(matches!(run.path_indices(), Err(RunError::Paths { .. })));
    }

    #[test]
    fn transport_names() {
        assert_eq!("quinn".parse::<Transport>().unwrap(), Transport::Quinn);
        assert_eq!("mpquic".parse::<Transport>().unwrap(), Transport::Mpquic);
        let e = "tcp".parse::<Transport>().unwrap_err();
        assert_eq!(e.to_string(), "unknown transport \"tcp\": mpquic or quinn");
    }
}
