//! A client and server whose paths cross the loopback link emulator of `mpquic-netns` (no
//! root): each path is a relay front with its own emulated links.

use std::net::SocketAddr;
use std::sync::Arc;

use mpquic_core::{Config, Connection, Endpoint, SelfSigned};
use mpquic_netns::relay::{Relay, RelayPath};
use mpquic_scenario::link::LinkConfig;

use super::local;

/// The session, and what must live as long as it does.
pub struct RelayedPair {
    pub client: Connection,
    pub server: Connection,
    /// Where the client reaches each path's relay front, path by path.
    pub fronts: Vec<SocketAddr>,
    pub relay: Relay,
    pub client_endpoint: Endpoint,
    pub server_endpoint: Endpoint,
}

/// Both ends on `config`, one relay path per `(uplink, downlink)`; the session is up on the
/// first path only, and the test opens the others through `fronts`.
pub async fn relayed_pair(config: Config, links: Vec<(LinkConfig, LinkConfig)>) -> RelayedPair {
    let config = Arc::new(config);
    let certificate = SelfSigned::new(&["localhost"]).unwrap();
    let mut server_tls = certificate.server_config().unwrap();
    server_tls.transport_config(config.clone());
    let server_endpoint = Endpoint::server(server_tls, local(1)).unwrap();
    let server_addr = server_endpoint.local_addr().unwrap();
    let relay = Relay::start(
        links
            .into_iter()
            .map(|(uplink, downlink)| RelayPath {
                listen: local(1),
                server: server_addr,
                uplink,
                downlink,
            })
            .collect(),
    )
    .unwrap();
    let fronts = relay.local_addrs().to_vec();
    let mut client_tls = certificate.client_config().unwrap();
    client_tls.transport_config(config);
    let mut client_endpoint = Endpoint::client(local(1)).unwrap();
    client_endpoint.set_default_client_config(client_tls);
    let (client, server) =
        super::connect_and_accept(&client_endpoint, &server_endpoint, fronts[0]).await;
    RelayedPair {
        client,
        server,
        fronts,
        relay,
        client_endpoint,
        server_endpoint,
    }
}
