//! What each side brings to a handshake: its TLS configuration (any quinn crypto, rustls's in
//! particular) and the multipath [`Config`] of the connections it makes or accepts. The shapes
//! are quinn's own `ClientConfig` and `ServerConfig`, so that code written for quinn keeps its
//! rustls set-up (ALPN, client authentication, verifiers, key logging) as it is.

use std::sync::Arc;

use quinn::rustls;
use quinn::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::config::Config;

/// How a client connects: its TLS configuration and the settings of its connections.
///
/// ```
/// use std::sync::Arc;
/// use mpquic_core::crypto::rustls::QuicClientConfig;
///
/// let mut crypto = rustls::ClientConfig::builder()
///     .with_root_certificates(rustls::RootCertStore::empty())
///     .with_no_client_auth();
/// crypto.alpn_protocols = vec![b"hq-29".to_vec()];
/// let mut client = mpquic_core::ClientConfig::new(Arc::new(QuicClientConfig::try_from(crypto)?));
/// client.transport_config(Arc::new(mpquic_core::Config::default()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub(crate) quinn: quinn::ClientConfig,
    pub(crate) transport: Arc<Config>,
}

impl ClientConfig {
    /// A client with the given TLS configuration (e.g. quinn's `QuicClientConfig` built from a
    /// `rustls::ClientConfig`) and the default [`Config`].
    pub fn new(crypto: Arc<dyn quinn::crypto::ClientConfig>) -> Self {
        Self {
            quinn: quinn::ClientConfig::new(crypto),
            transport: Arc::default(),
        }
    }

    /// A client that trusts the certificates in `roots`, with rustls's defaults otherwise.
    ///
    /// # Errors
    /// rustls cannot build a verifier from `roots` (e.g. the store is empty).
    pub fn with_root_certificates(
        roots: Arc<rustls::RootCertStore>,
    ) -> Result<Self, rustls::client::VerifierBuilderError> {
        Ok(Self {
            quinn: quinn::ClientConfig::with_root_certificates(roots)?,
            transport: Arc::default(),
        })
    }

    /// The settings of every connection made with this configuration, and of its paths.
    pub fn transport_config(&mut self, transport: Arc<Config>) -> &mut Self {
        self.transport = transport;
        self
    }
}

/// How a server accepts: its TLS configuration and the settings of the sessions it accepts.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub(crate) quinn: quinn::ServerConfig,
    /// The settings of every session this server accepts, and of its paths (a field, as
    /// quinn's `ServerConfig::transport` is, so that `Arc::get_mut` can change them in place).
    pub transport: Arc<Config>,
    pub(crate) retry_unvalidated: bool,
}

impl ServerConfig {
    /// A server with the given TLS configuration (e.g. quinn's `QuicServerConfig` built from a
    /// `rustls::ServerConfig`) and the default [`Config`].
    pub fn with_crypto(crypto: Arc<dyn quinn::crypto::ServerConfig>) -> Self {
        Self {
            quinn: quinn::ServerConfig::with_crypto(crypto),
            transport: Arc::default(),
            retry_unvalidated: false,
        }
    }

    /// A server presenting one certificate chain, with rustls's defaults otherwise.
    ///
    /// # Errors
    /// rustls refuses the key or the chain.
    pub fn with_single_cert(
        cert_chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, rustls::Error> {
        Ok(Self {
            quinn: quinn::ServerConfig::with_single_cert(cert_chain, key)?,
            transport: Arc::default(),
            retry_unvalidated: false,
        })
    }

    /// The settings of every session this server accepts, and of its paths.
    pub fn transport_config(&mut self, transport: Arc<Config>) -> &mut Self {
        self.transport = transport;
        self
    }

    /// Whether every path's first packet from an address not yet validated is answered with a
    /// stateless retry (RFC 9000, section 8.1.2) before anything else, joins included, so that
    /// the server keeps no state for a spoofed address. It costs a round trip per path. An
    /// application that decides per attempt at a session calls
    /// [`Incoming::retry`](crate::Incoming::retry) instead; joins, which never reach the
    /// application, then come up without one.
    ///
    /// # Default
    /// Off.
    pub fn retry_unvalidated(&mut self, retry: bool) -> &mut Self {
        self.retry_unvalidated = retry;
        self
    }
}

/// A fresh self-signed certificate and its key: for tests, demos and labs on loopback, never for
/// a server that clients elsewhere should trust.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let certificate = mpquic_core::SelfSigned::new(&["localhost"])?;
/// let server = certificate.server_config()?;
/// let client = certificate.client_config()?; // trusts this certificate only
/// # Ok(())
/// # }
/// ```
pub struct SelfSigned {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

/// A [`SelfSigned`] certificate could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// rcgen could not generate it.
    #[error("cannot generate a self-signed certificate")]
    Generate(#[source] rcgen::Error),
    /// rustls refused it or its key.
    #[error("rustls refused the self-signed certificate")]
    Rustls(#[from] rustls::Error),
    /// rustls could not build a verifier that trusts it.
    #[error("cannot trust the self-signed certificate")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
}

impl std::fmt::Debug for SelfSigned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfSigned").finish_non_exhaustive()
    }
}

impl SelfSigned {
    /// An ECDSA P-256 certificate for the DNS `names` (e.g. `["localhost"]`): what every TLS
    /// stack and browser takes.
    ///
    /// # Errors
    /// rcgen refuses a name or cannot generate the key.
    pub fn new(names: &[&str]) -> Result<Self, CertificateError> {
        Self::generate(names, &rcgen::PKCS_ECDSA_P256_SHA256)
    }

    /// An Ed25519 certificate for the DNS `names`. Its signatures have one size, so handshakes
    /// on simulated links are the same run after run (ECDSA's vary by a byte or two); not
    /// every TLS stack offers it.
    ///
    /// # Errors
    /// rcgen refuses a name or cannot generate the key.
    pub fn ed25519(names: &[&str]) -> Result<Self, CertificateError> {
        Self::generate(names, &rcgen::PKCS_ED25519)
    }

    fn generate(
        names: &[&str],
        algorithm: &'static rcgen::SignatureAlgorithm,
    ) -> Result<Self, CertificateError> {
        let key = rcgen::KeyPair::generate_for(algorithm).map_err(CertificateError::Generate)?;
        let names = names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        let cert = rcgen::CertificateParams::new(names)
            .and_then(|params| params.self_signed(&key))
            .map_err(CertificateError::Generate)?;
        Ok(Self { cert, key })
    }

    /// The certificate, DER.
    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.cert.der().clone()
    }

    /// The private key, PKCS #8 DER.
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivatePkcs8KeyDer::from(self.key.serialize_der()).into()
    }

    /// The certificate, PEM (for peers that read files).
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// The private key, PEM.
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// A root store that trusts this certificate only.
    ///
    /// # Errors
    /// rustls cannot parse the certificate.
    pub fn roots(&self) -> Result<rustls::RootCertStore, CertificateError> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert_der())?;
        Ok(roots)
    }

    /// A server presenting this certificate.
    ///
    /// # Errors
    /// rustls refuses the certificate or key.
    pub fn server_config(&self) -> Result<ServerConfig, CertificateError> {
        Ok(ServerConfig::with_single_cert(
            vec![self.cert_der()],
            self.key_der(),
        )?)
    }

    /// A client that trusts this certificate only.
    ///
    /// # Errors
    /// rustls refuses the certificate.
    pub fn client_config(&self) -> Result<ClientConfig, CertificateError> {
        Ok(ClientConfig::with_root_certificates(Arc::new(
            self.roots()?,
        ))?)
    }
}
