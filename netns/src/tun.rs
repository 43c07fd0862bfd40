//! A layer-3 TUN device opened by this process: the namespace topology's end of each path.
//!
//! The device is created in the current network namespace (unconfigured, no address), then
//! moved into a namespace with `ip link set DEV netns NS`; its file descriptor keeps working
//! there. The kernel writes every IP packet routed out of the device to the descriptor, and a
//! packet written to the descriptor arrives on the device as if received. Closing the
//! descriptor (dropping the [`TunDevice`]) deletes the device, wherever it is.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use crate::direction::{Delivery, Outlet};
use crate::error::NetnsError;
use crate::pump::Inlet;

/// Longest interface name Linux accepts (`IFNAMSIZ` minus the terminating NUL).
pub const MAX_IFNAME_LEN: usize = 15;

/// Largest packet read from a device: its MTU is 1500, this leaves room for anything.
pub const MAX_PACKET: usize = 65_535;

/// An open TUN device (IP packets, no packet-information header).
pub struct TunDevice {
    name: String,
    device: ::tun::Device,
}

impl std::fmt::Debug for TunDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunDevice")
            .field("name", &self.name)
            .finish()
    }
}

impl TunDevice {
    /// Creates the TUN device `name` in the current namespace, down and without addresses.
    ///
    /// # Errors
    /// [`NetnsError::InvalidLink`] for an empty name, one longer than [`MAX_IFNAME_LEN`] or
    /// with characters other than ASCII letters, digits, `-`, `_` and `.`;
    /// [`NetnsError::Io`] naming the device when the kernel refuses (not root, no
    /// `/dev/net/tun`, name in use).
    pub fn create(name: &str) -> Result<TunDevice, NetnsError> {
        validate_ifname(name)?;
        let mut config = ::tun::Configuration::default();
        config.tun_name(name).layer(::tun::Layer::L3);
        // Only create it: addresses go on once it is in its namespace.
        config.platform_config(|p| {
            p.ensure_root_privileges(false);
        });
        let device = ::tun::create(&config).map_err(|e| NetnsError::Io {
            context: format!("cannot create TUN device {name}"),
            source: io::Error::other(e.to_string()),
        })?;
        Ok(TunDevice {
            name: name.to_owned(),
            device,
        })
    }

    /// Its interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one IP packet into `buf`, waiting at most `timeout`; `Ok(None)` when none came.
    ///
    /// # Errors
    /// The device's read error (e.g. the device is gone).
    pub fn recv_timeout(&self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        match self.device.recv_timeout(buf, timeout) {
            Ok(n) => Ok(Some(n)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut
                        | io::ErrorKind::WouldBlock
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Makes reads return at once when no packet is waiting (the pump waits on the device).
    ///
    /// # Errors
    /// The `fcntl` error.
    pub fn set_nonblocking(&self) -> io::Result<()> {
        self.device.set_nonblock()
    }

    /// Writes one IP packet: it arrives on the device.
    ///
    /// # Errors
    /// The device's write error (e.g. a malformed packet, the device is down).
    pub fn send(&self, packet: &[u8]) -> io::Result<usize> {
        self.device.send(packet)
    }
}

impl Outlet for TunDevice {
    fn deliver(&self, data: &[u8]) -> Delivery {
        match self.send(data) {
            Ok(_) => Delivery::Sent,
            Err(_) => Delivery::Failed,
        }
    }
}

impl Inlet for std::sync::Arc<TunDevice> {
    fn raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.device)
    }

    fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, Option<SocketAddr>)>> {
        match self.device.recv(buf) {
            Ok(n) => Ok(Some((n, None))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Checks that `name` can be an interface name (and is safe as an `ip` argument).
pub(crate) fn validate_ifname(name: &str) -> Result<(), NetnsError> {
    if name.is_empty() || name.len() > MAX_IFNAME_LEN {
        return Err(NetnsError::link(format!(
            "interface name {name:?} must be 1 to {MAX_IFNAME_LEN} bytes, not {}",
            name.len()
        )));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(NetnsError::link(format!(
            "interface name {name:?} may only hold ASCII letters, digits, '-', '_' and '.'"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked() {
        assert!(validate_ifname("mq1234567x1c0").is_ok());
        assert!(validate_ifname("").is_err());
        assert!(validate_ifname("a234567890123456").is_err());
        assert!(validate_ifname("a b").is_err());
        assert!(validate_ifname("a/b").is_err());
    }
}
