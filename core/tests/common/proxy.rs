//! A TCP proxy on a free loopback port whose open connections can be frozen: a frozen
//! connection still reads, and passes on an end of stream, but forwards no bytes either way, as
//! a network that stopped delivering; connections opened after the freeze flow.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub port: u16,
    /// How long bytes from the server wait before they are passed on (none by default).
    delay: watch::Sender<std::time::Duration>,
    /// Connections numbered below this forward nothing.
    frozen_below: watch::Sender<u64>,
    opened: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Forward 127.0.0.1:<port> to `target` (host:port).
    pub async fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (frozen_below, watching) = watch::channel(0u64);
        let (delay, delaying) = watch::channel(std::time::Duration::ZERO);
        let opened = Arc::new(AtomicU64::new(0));
        let target = target.to_string();
        let task = tokio::spawn({
            let opened = opened.clone();
            async move {
                while let Ok((inbound, _)) = listener.accept().await {
                    let id = opened.fetch_add(1, Ordering::SeqCst);
                    let watching = watching.clone();
                    let delaying = delaying.clone();
                    let target = target.clone();
                    tokio::spawn(async move {
                        let Ok(outbound) = TcpStream::connect(&target).await else {
                            return;
                        };
                        let (ri, wi) = inbound.into_split();
                        let (ro, wo) = outbound.into_split();
                        tokio::join!(
                            pipe(id, ri, wo, watching.clone(), None),
                            pipe(id, ro, wi, watching, Some(delaying))
                        );
                    });
                }
            }
        });
        Proxy {
            port,
            delay,
            frozen_below,
            opened,
            task,
        }
    }

    /// Freeze the connections open now.
    pub fn freeze(&self) {
        self.frozen_below
            .send_replace(self.opened.load(Ordering::SeqCst));
    }

    /// Hold what the server sends for `d` before passing it on (a slow network): what is in
    /// flight when the proxy freezes is then never delivered.
    pub fn delay_replies(&self, d: std::time::Duration) {
        self.delay.send_replace(d);
    }

    /// Connections opened through the proxy so far.
    pub fn connections(&self) -> u64 {
        self.opened.load(Ordering::SeqCst)
    }

    pub fn thaw(&self) {
        self.frozen_below.send_replace(0);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pipe(
    id: u64,
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut frozen_below: watch::Receiver<u64>,
    delay: Option<watch::Receiver<std::time::Duration>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let d = delay
            .as_ref()
            .map_or(std::time::Duration::ZERO, |d| *d.borrow());
        if !d.is_zero() {
            tokio::time::sleep(d).await;
        }
        if frozen_below.wait_for(|&f| id >= f).await.is_err()
            || to.write_all(&buf[..n]).await.is_err()
        {
            break;
        }
    }
    let _ = to.shutdown().await;
}
