//! ZooKeeper over TLS (`zks://`): a standalone server of the test's own with a secure client
//! port (Netty, PEM certificates made by openssl for this test), locked through, and refused
//! with typed errors when the certificate is not trusted.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use polylock::{AcquireOptions, Client, ErrorKind, Released};

fn openssl(dir: &Path, args: &[&str]) {
    let ok = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl must be installed (scripts/servers.sh install)")
        .success();
    assert!(ok, "openssl {args:?}");
}

/// A CA (`<prefix>ca.pem`) and, signed by it, a certificate for 127.0.0.1 with its key in one
/// PEM file (`<prefix>server.pem`, as ZooKeeper's PEM keystore wants it).
fn certificates(dir: &Path, prefix: &str) {
    let f = |n: &str| format!("{prefix}{n}");
    openssl(dir, &["genpkey", "-algorithm", "RSA", "-out", &f("ca.key")]);
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            &f("ca.key"),
            "-days",
            "2",
            "-subj",
            "/CN=polylock test CA",
            "-out",
            &f("ca.pem"),
        ],
    );
    openssl(
        dir,
        &["genpkey", "-algorithm", "RSA", "-out", &f("server.key")],
    );
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            &f("server.key"),
            "-subj",
            "/CN=127.0.0.1",
            "-out",
            &f("server.csr"),
        ],
    );
    std::fs::write(
        dir.join(f("ext.cnf")),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &f("server.csr"),
            "-CA",
            &f("ca.pem"),
            "-CAkey",
            &f("ca.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &f("ext.cnf"),
            "-out",
            &f("server.crt"),
        ],
    );
    let key = std::fs::read_to_string(dir.join(f("server.key"))).unwrap();
    let crt = std::fs::read_to_string(dir.join(f("server.crt"))).unwrap();
    std::fs::write(dir.join(f("server.pem")), format!("{key}{crt}")).unwrap();
}

/// Whether the ZooKeeper on `port` serves requests (its `srvr` answer names its mode).
fn serving(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut answer = String::new();
    s.write_all(b"srvr").is_ok()
        && s.read_to_string(&mut answer).is_ok()
        && answer.contains("Mode:")
}

struct TlsZk {
    dir: PathBuf,
    port: u16,
    secure: u16,
    child: std::process::Child,
}

impl TlsZk {
    fn start() -> TlsZk {
        let (port, secure) = (free_port(), free_port());
        let dir = std::env::temp_dir().join(format!("polylock-zk-tls-{port}"));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        certificates(&dir, "");
        certificates(&dir, "other-");
        let d = dir.display();
        std::fs::write(
            dir.join("zoo.cfg"),
            format!(
                "tickTime=500\ndataDir={d}/data\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
                 secureClientPort={secure}\nsecureClientPortAddress=127.0.0.1\n\
                 serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
                 ssl.keyStore.location={d}/server.pem\nssl.keyStore.type=PEM\n\
                 ssl.trustStore.location={d}/ca.pem\nssl.trustStore.type=PEM\n\
                 ssl.clientAuth=none\nadmin.enableServer=false\n\
                 4lw.commands.whitelist=srvr\nminSessionTimeout=1000\n"
            ),
        )
        .unwrap();
        // Debian's zkServer.sh leaves netty's codec off the class path, which the secure port
        // needs: run the server class directly, with it.
        let jars = [
            "/etc/zookeeper/conf",
            "/usr/share/java/zookeeper.jar",
            "/usr/share/java/netty-codec.jar",
            "/usr/share/java/netty-resolver.jar",
        ];
        let log = std::fs::File::create(dir.join("zookeeper.out")).unwrap();
        let child = Command::new("java")
            .args(["-Xmx256m", "-cp", &jars.join(":")])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(dir.join("zoo.cfg"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("java and zookeeper must be installed (scripts/servers.sh install)");
        let zk = TlsZk {
            dir,
            port,
            secure,
            child,
        };
        // Ready when it serves (`srvr` on the plain port names its mode; before that it answers
        // "not currently serving requests", and a session asked for then is refused) and the
        // secure port takes connections: an open port alone came first on a loaded machine.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(serving(zk.port) && std::net::TcpStream::connect(("127.0.0.1", zk.secure)).is_ok())
        {
            assert!(Instant::now() < deadline, "the TLS ZooKeeper did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        zk
    }

    fn url(&self, ca: &str) -> String {
        format!(
            "zks://127.0.0.1:{}?tls_ca_file={}",
            self.secure,
            self.dir.join(ca).display()
        )
    }
}

impl Drop for TlsZk {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zks_urls_lock_over_tls_and_refuse_an_untrusted_server() {
    let zk = tokio::task::spawn_blocking(TlsZk::start).await.unwrap();

    // The server is ready for this test when a TLS session opens: its first handshakes (a cold
    // JVM's TLS stack) can outlast a connect timeout on a loaded machine, and each failed try is
    // a typed connection error.
    let deadline = Instant::now() + Duration::from_secs(60);
    let c = loop {
        match Client::connect(&zk.url("ca.pem")).await {
            Ok(c) => break c,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
                assert!(Instant::now() < deadline, "no TLS session within 60 s: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    };
    let lock = c.lock("/tls/goods").unwrap();
    let held = lock.acquire(1, AcquireOptions::forever()).await.unwrap();
    assert!(held.fencing_token > 0);
    let other = Client::connect(&zk.url("ca.pem")).await.unwrap();
    let waiting = {
        let l = other.lock("/tls/goods").unwrap();
        tokio::spawn(async move { l.acquire(2, AcquireOptions::forever()).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "held over TLS");
    assert_eq!(lock.release(1).await.unwrap(), Released::Freed);
    tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken over TLS")
        .unwrap()
        .unwrap();
    other.lock("/tls/goods").unwrap().release(2).await.unwrap();
    c.close().await.unwrap();
    other.close().await.unwrap();

    // A CA that did not sign the server's certificate: a typed connection error, not a hang.
    let started = Instant::now();
    let err = Client::connect(&zk.url("other-ca.pem")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(started.elapsed() < Duration::from_secs(15));
    // Plain zk:// against the TLS port does not get a session either.
    let err = Client::connect(&format!("zk://127.0.0.1:{}", zk.secure))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    // A missing CA file is a bad argument, said at connect.
    let err = Client::connect(&format!(
        "zks://127.0.0.1:{}?tls_ca_file=/nonexistent/ca.pem",
        zk.secure
    ))
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    // The plain port of the same server still answers plain clients.
    let plain = Client::connect(&format!("zk://127.0.0.1:{}", zk.port))
        .await
        .unwrap();
    plain.close().await.unwrap();
}
