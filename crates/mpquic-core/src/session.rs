//! Sessions and joins: the secret handed out on the first path and the proof every further path
//! presents.
//!
//! The proof is HMAC-SHA256 keyed with the 128-bit join secret over the session id and a value
//! exported from the joining path's own TLS session (RFC 5705 / RFC 8446 exporter). Binding it to
//! the path's TLS keys means a proof seen on one path is worthless on any other.

use hmac::{Hmac, Mac};
use quinn::{ConnectionId, ConnectionIdGenerator};
use sha2::Sha256;

use crate::wire::SessionId;

/// Length of the join secret in bytes (128 bits).
pub const SECRET_LEN: usize = 16;
/// Length of a join proof in bytes.
pub const PROOF_LEN: usize = 32;

/// Length of the connection ID a joining path's first packet is addressed to. A server tells a
/// join from a new session by it before any handshake, so that only sessions reach the
/// application's [`Incoming`](crate::Incoming) decisions. RFC 9000 asks for at least 8
/// unpredictable bytes; quinn's own first IDs are 20 bytes long.
pub const JOIN_CID_LEN: usize = 16;

const EXPORTER_LABEL: &[u8] = b"EXPORTER-mpquic-join";
const PROOF_DOMAIN: &[u8] = b"mpquic join v1";

/// A fresh random session id and join secret.
pub(crate) fn new_session() -> Result<(SessionId, [u8; SECRET_LEN]), getrandom::Error> {
    let mut id = [0u8; 8];
    let mut secret = [0u8; SECRET_LEN];
    getrandom::fill(&mut id)?;
    getrandom::fill(&mut secret)?;
    // Session ids travel as QUIC varints: keep 62 bits.
    Ok((
        SessionId(u64::from_be_bytes(id) & crate::wire::MAX_VARINT),
        secret,
    ))
}

/// A fresh random connection ID for a joining path's first packet.
pub(crate) fn join_cid() -> ConnectionId {
    quinn_proto::RandomConnectionIdGenerator::new(JOIN_CID_LEN).generate_cid()
}

/// Whether a connection whose client first addressed `cid` says it is a join.
pub(crate) fn is_join(cid: &ConnectionId) -> bool {
    cid.len() == JOIN_CID_LEN
}

/// The keying material both ends of `conn` derive for a join of `session`; `None` if the
/// connection's TLS session cannot export (it is not established).
pub fn exporter(conn: &quinn::Connection, session: SessionId) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    conn.export_keying_material(&mut out, EXPORTER_LABEL, &session.0.to_be_bytes())
        .ok()?;
    Some(out)
}

fn mac(secret: &[u8; SECRET_LEN], session: SessionId, exported: &[u8; 32]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(PROOF_DOMAIN);
    mac.update(&session.0.to_be_bytes());
    mac.update(exported);
    mac
}

/// The proof a joining path presents in [`Frame::Join`](crate::wire::Frame::Join).
pub fn proof(
    secret: &[u8; SECRET_LEN],
    session: SessionId,
    exported: &[u8; 32],
) -> [u8; PROOF_LEN] {
    mac(secret, session, exported)
        .finalize()
        .into_bytes()
        .into()
}

/// Checks a proof in constant time.
pub(crate) fn verify(
    secret: &[u8; SECRET_LEN],
    session: SessionId,
    exported: &[u8; 32],
    proof: &[u8; PROOF_LEN],
) -> bool {
    mac(secret, session, exported).verify_slice(proof).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_verifies_only_with_its_secret_session_and_exporter() {
        let (session, secret) = new_session().unwrap();
        let exported = [7u8; 32];
        let good = proof(&secret, session, &exported);
        assert!(verify(&secret, session, &exported, &good));
        let mut other_secret = secret;
        other_secret[0] ^= 1;
        assert!(!verify(&other_secret, session, &exported, &good));
        assert!(!verify(&secret, SessionId(session.0 ^ 1), &exported, &good));
        assert!(!verify(&secret, session, &[8u8; 32], &good));
    }
}
