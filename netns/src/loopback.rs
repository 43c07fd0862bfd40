//! The testbed without root: every path of a scenario as a [`Relay`] on loopback, each in
//! front of its own [`ProbeServer`], so a laptop or CI runs the same links and the same checks
//! as the namespace testbed.

use std::net::{Ipv4Addr, SocketAddr};

use mpquic_scenario::Scenario;

use crate::error::NetnsError;
use crate::probe::{check_path, PathCheck, ProbeServer, Prober};
use crate::relay::{Relay, RelayPath};
use mpquic_scenario::link::LinkConfig;

/// Any free port on 127.0.0.1.
pub fn any_loopback_port() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

/// Relay paths for `scenario`: path k listens on `listen[k]` (any free port if not given) and
/// forwards to `servers[k]`; each direction's loss is seeded by `loss_seed`, path and
/// direction ([`LinkConfig::of_path`]), so runs are reproducible.
///
/// # Errors
/// [`NetnsError::InvalidLink`] when `servers` does not name one server per path.
pub fn relay_paths(
    scenario: &Scenario,
    listen: &[SocketAddr],
    servers: &[SocketAddr],
    loss_seed: u64,
) -> Result<Vec<RelayPath>, NetnsError> {
    if servers.len() != scenario.paths.len() {
        return Err(NetnsError::InvalidLink {
            reason: format!(
                "{} has {} paths but {} server addresses were given",
                scenario.name,
                scenario.paths.len(),
                servers.len()
            ),
        });
    }
    Ok(scenario
        .paths
        .iter()
        .zip(servers)
        .enumerate()
        .map(|(k, (spec, &server))| {
            let (uplink, downlink) = LinkConfig::of_path(spec, loss_seed, k);
            RelayPath {
                listen: listen.get(k).copied().unwrap_or_else(any_loopback_port),
                server,
                uplink,
                downlink,
            }
        })
        .collect())
}

/// A scenario's paths relayed on loopback to probe servers; dropping it stops everything.
pub struct LoopbackTestbed {
    scenario: &'static Scenario,
    relay: Relay,
    // Held so the servers live as long as the relay that feeds them.
    _servers: Vec<ProbeServer>,
}

impl LoopbackTestbed {
    /// Starts one probe server per path and the relay in front of them.
    ///
    /// # Errors
    /// Socket errors, naming the address, and invalid links; nothing is left running.
    pub fn start(scenario: &'static Scenario) -> Result<Self, NetnsError> {
        let servers = scenario
            .paths
            .iter()
            .map(|_| ProbeServer::start(any_loopback_port()))
            .collect::<Result<Vec<_>, _>>()?;
        let addrs: Vec<_> = servers.iter().map(ProbeServer::local_addr).collect();
        let relay = Relay::start(relay_paths(scenario, &[], &addrs, 0)?)?;
        Ok(Self {
            scenario,
            relay,
            _servers: servers,
        })
    }

    /// The scenario it emulates.
    pub fn scenario(&self) -> &'static Scenario {
        self.scenario
    }

    /// The relay, for its addresses and counters.
    pub fn relay(&self) -> &Relay {
        &self.relay
    }

    /// A prober for path `path`, through the relay.
    ///
    /// # Errors
    /// [`NetnsError::InvalidLink`] for a path the scenario does not have; socket errors.
    pub fn prober(&self, path: usize) -> Result<Prober, NetnsError> {
        let target =
            self.relay
                .local_addrs()
                .get(path)
                .copied()
                .ok_or_else(|| NetnsError::InvalidLink {
                    reason: format!(
                        "{} has paths 0..{}, not {path}",
                        self.scenario.name,
                        self.scenario.paths.len()
                    ),
                })?;
        Prober::new(target)
    }

    /// Measures every path against its configuration (RTT, goodput and loss per direction).
    ///
    /// # Errors
    /// A path that does not answer, or socket errors.
    pub fn check(&self) -> Result<Vec<PathCheck>, NetnsError> {
        self.scenario
            .paths
            .iter()
            .enumerate()
            .map(|(k, spec)| check_path(&self.prober(k)?, spec))
            .collect()
    }
}
