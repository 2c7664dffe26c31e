//! TLS for tokio-postgres through rustls (the crypto provider the workspace already uses), so
//! that no OpenSSL is linked. MySQL's driver brings its own rustls support (`require_ssl=true`
//! in the URL). Without the `tls` feature, [`MakeTls`] makes plain connections only (a URL that
//! asks for TLS was refused when it was parsed).

#[cfg(not(feature = "tls"))]
pub(crate) use tokio_postgres::NoTls as MakeTls;
#[cfg(feature = "tls")]
pub(crate) use with_rustls::MakeRustls as MakeTls;

/// Plain connections: what `MakeTls::new` is in a build without `tls`.
#[cfg(not(feature = "tls"))]
pub(crate) fn make_tls(_root_cert: Option<&str>) -> crate::model::error::Result<MakeTls> {
    Ok(tokio_postgres::NoTls)
}

/// Another handle on the connector: `NoTls` is `Copy`, rustls' connector only `Clone`.
#[allow(clippy::clone_on_copy)]
pub(crate) fn copy_tls(tls: &MakeTls) -> MakeTls {
    tls.clone()
}

#[cfg(feature = "tls")]
pub(crate) fn make_tls(root_cert: Option<&str>) -> crate::model::error::Result<MakeTls> {
    MakeTls::new(root_cert)
}

#[cfg(feature = "tls")]
mod with_rustls {

    use std::io;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use futures_util::future::BoxFuture;
    use rustls::pki_types::ServerName;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

    use crate::model::error::{Error, Result};

    /// Makes rustls connections, verifying the server against the built-in roots and the
    /// `sslrootcert` file of the URL.
    #[derive(Clone)]
    pub(crate) struct MakeRustls {
        config: Arc<rustls::ClientConfig>,
    }

    impl MakeRustls {
        pub(crate) fn new(root_cert: Option<&str>) -> Result<MakeRustls> {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            if let Some(path) = root_cert {
                use rustls::pki_types::pem::PemObject;
                let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                    .map_err(|e| Error::invalid(format!("sslrootcert '{path}': {e}")))?;
                for cert in certs {
                    let cert =
                        cert.map_err(|e| Error::invalid(format!("sslrootcert '{path}': {e}")))?;
                    roots
                        .add(cert)
                        .map_err(|e| Error::invalid(format!("sslrootcert '{path}': {e}")))?;
                }
            }
            let config = rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(MakeRustls {
                config: Arc::new(config),
            })
        }
    }

    impl<S> MakeTlsConnect<S> for MakeRustls
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        type Stream = RustlsStream<S>;
        type TlsConnect = RustlsConnect;
        type Error = io::Error;

        fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnect> {
            let name = ServerName::try_from(domain.to_string())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            Ok(RustlsConnect {
                config: self.config.clone(),
                name,
            })
        }
    }

    /// One TLS handshake to come.
    pub(crate) struct RustlsConnect {
        config: Arc<rustls::ClientConfig>,
        name: ServerName<'static>,
    }

    impl<S> TlsConnect<S> for RustlsConnect
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        type Stream = RustlsStream<S>;
        type Error = io::Error;
        type Future = BoxFuture<'static, io::Result<RustlsStream<S>>>;

        fn connect(self, stream: S) -> Self::Future {
            Box::pin(async move {
                let s = tokio_rustls::TlsConnector::from(self.config)
                    .connect(self.name, stream)
                    .await?;
                Ok(RustlsStream(s))
            })
        }
    }

    /// A TLS stream to the server.
    pub(crate) struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

    impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_read(cx, buf)
        }
    }

    impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.0).poll_write(cx, buf)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_shutdown(cx)
        }
    }

    impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
        fn channel_binding(&self) -> ChannelBinding {
            // SCRAM without channel binding (scram-sha-256, not -PLUS).
            ChannelBinding::none()
        }
    }
}
