//! `polylock serve`: the server's view for Prometheus (`/metrics`), as JSON (`/api/locks`), as
//! server-sent events (`/events`) and as a live page (`/`). Read-only: nothing it serves
//! changes a lock.
//!
//! Safe to leave running: it holds at most `--max-connections` connections (capped by the
//! open-file limit), closes a connection that has not sent a full request header within
//! [`HEADER_TIMEOUT`] (from its opening or the end of its previous response), and at the limit
//! closes the oldest connection that is not in the middle of a request to make room, so idle
//! sockets can neither exhaust its file descriptors nor keep a scrape out. `/events` takes at
//! most [`MAX_SUBSCRIBERS`] subscribers, and every one of them is sent the same bytes: the view
//! is serialized once per read of the server. axum::serve offers none of these limits; the
//! accept loop here drives hyper's HTTP/1 connections itself, as axum does inside.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, Request, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::stream::Stream;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch, Semaphore};

use super::view::{self, Tracker};
use crate::{Client, Error, ErrorKind};

/// The default of `--max-connections`.
pub(super) const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// How long a connection may take to send a full request header, counted from its opening or
/// from the end of its previous response (keep-alive): then it is closed.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most `/events` subscribers at once (or half the connection limit, if less: scrapes keep
/// room); the next one gets 503.
const MAX_SUBSCRIBERS: usize = 64;
/// File descriptors left out of the connection limit: the lock server's connections, the
/// runtime's own, stdio.
const FD_RESERVE: usize = 64;
/// How long open connections get to finish after SIGINT or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// An `/events` comment line after this long without a change (proxies close silent streams).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One view of the server, as every route serves it: serialized once, when it is read, and
/// shared (a `Bytes` clone is a reference count) by every request and subscriber.
struct Snapshot {
    /// The view as JSON (`/api/locks`).
    json: Bytes,
    /// The same JSON as one server-sent event, `data: ...` and a blank line (`/events`).
    event: Bytes,
    /// The Prometheus text (`/metrics`).
    metrics: Bytes,
}

impl Snapshot {
    fn new(view: &Value, metrics: String) -> Snapshot {
        // serde_json writes no raw newline, so the JSON is one `data:` line.
        let json = view.to_string();
        let event = format!("data: {json}\n\n");
        Snapshot {
            json: Bytes::from(json),
            event: Bytes::from(event),
            metrics: Bytes::from(metrics),
        }
    }
}

#[derive(Clone)]
struct App {
    view: watch::Receiver<Arc<Snapshot>>,
    token: Option<Arc<str>>,
    /// The Host names accepted besides loopback ones; `None`: no Host check (a non-loopback
    /// address without --allow-host).
    hosts: Option<Arc<[String]>>,
    /// One permit per `/events` subscriber.
    subscribers: Arc<Semaphore>,
}

/// How `serve` listens and whom it answers.
pub(super) struct Options {
    pub(super) listen: SocketAddr,
    /// The bearer token every request must carry.
    pub(super) token: Option<String>,
    /// Host names accepted besides loopback ones (--allow-host).
    pub(super) allow_hosts: Vec<String>,
    /// How often the server is read.
    pub(super) interval: Duration,
    /// The most names one read takes.
    pub(super) limit: usize,
    /// The most connections at once (--max-connections; the open-file limit may lower it).
    pub(super) max_connections: usize,
}

/// Serve until SIGINT or SIGTERM.
pub(super) async fn serve(client: &Client, pattern: &str, options: Options) -> Result<u8, Error> {
    let Options {
        listen,
        token,
        allow_hosts,
        interval,
        limit,
        max_connections,
    } = options;
    // The first read before listening: a wrong pattern or server fails here, not on a scrape.
    let mut tracker = Tracker::new();
    let first = read(client, pattern, limit, &mut tracker).await?;
    let (tx, rx) = watch::channel(Arc::new(first));
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("cannot listen on {listen}: {e}"),
        )
    })?;
    let bound = listener.local_addr().unwrap_or(listen);
    if !bound.ip().is_loopback() && token.is_none() {
        tell!(
            "polylock serve: listening on {bound}, beyond this machine, without --token: anyone \
             who can reach it sees the lock names and holders"
        );
    }
    // The address first, on its own line (a caller that asked for port 0 learns the port).
    say!("polylock serve: http://{bound}/ (metrics: http://{bound}/metrics)");
    let room = open_file_room();
    if room < max_connections {
        tell!(
            "polylock serve: at most {room} connections, not {max_connections}: the open-file \
             limit (ulimit -n) leaves no more"
        );
    }
    let connections = Arc::new(Connections::new(max_connections.min(room).max(1)));
    let subscribers = MAX_SUBSCRIBERS.min(connections.limit / 2).max(1);
    let app = Router::new()
        .route("/", get(page))
        .route("/metrics", get(metrics))
        .route("/api/locks", get(locks))
        .route("/events", get(events))
        .with_state(App {
            view: rx,
            token: token.map(Arc::from),
            // On loopback only a local name reaches serve legitimately: a browser sends the
            // page's own name, which under DNS rebinding is the attacker's.
            hosts: (bound.ip().is_loopback() || !allow_hosts.is_empty()).then(|| {
                allow_hosts
                    .iter()
                    .map(|h| host_name(h).to_string())
                    .collect()
            }),
            subscribers: Arc::new(Semaphore::new(subscribers)),
        });
    let poller = {
        let client = client.clone();
        let pattern = pattern.to_string();
        async move {
            loop {
                tokio::time::sleep(interval).await;
                match read(&client, &pattern, limit, &mut tracker).await {
                    Ok(s) => {
                        tx.send_replace(Arc::new(s));
                    }
                    Err(e) => {
                        tell!("polylock serve: reading the server failed: {e}");
                        let json =
                            json!({"at_ms": view::now_ms(), "error": e.to_string(), "locks": []});
                        let metrics = view::prometheus(&[], false, Duration::ZERO);
                        tx.send_replace(Arc::new(Snapshot::new(&json, metrics)));
                    }
                }
            }
        }
    };
    let (shutdown, stopping) = watch::channel(false);
    let accept = {
        let connections = connections.clone();
        async move {
            let mut warned = false;
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of file descriptors after all (another limit than ours), or a
                        // connection reset before it was accepted: wait rather than spin.
                        if !warned {
                            tell!("polylock serve: accepting a connection failed: {e}");
                            warned = true;
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // None: every connection is in the middle of a request; dropping it closes it.
                if let Some(admitted) = connections.admit() {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection(
                        stream,
                        app.clone(),
                        admitted,
                        connections.clone(),
                        stopping.clone(),
                    ));
                }
            }
        }
    };
    let mut signals = super::Signals::new()?;
    // The poller owns the view's sender: when it is dropped here, every /events stream ends.
    tokio::select! {
        () = accept => {}
        () = poller => {}
        _ = signals.next() => {}
    }
    let _ = shutdown.send(true);
    let until = Instant::now() + SHUTDOWN_GRACE + Duration::from_millis(200);
    while connections.count() > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(0)
}

/// The connections serve may hold: the open-file limit (its soft RLIMIT_NOFILE) less
/// [`FD_RESERVE`].
fn open_file_room() -> usize {
    // SAFETY: getrlimit(2) into a zeroed struct on the stack.
    let soft = unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return usize::MAX;
        }
        lim.rlim_cur
    };
    if soft == libc::RLIM_INFINITY {
        return usize::MAX;
    }
    usize::try_from(soft)
        .unwrap_or(usize::MAX)
        .saturating_sub(FD_RESERVE)
}

/// The open connections, oldest first, and how many there may be.
struct Connections {
    limit: usize,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    next_id: u64,
    list: Vec<Opened>,
}

struct Opened {
    id: u64,
    /// Requests of this connection being served (their response bodies not yet sent).
    busy: Arc<AtomicUsize>,
    /// Sent (or dropped) to close the connection.
    close: oneshot::Sender<()>,
}

/// A connection let in: its id, its count of requests in progress, and the signal to close it.
struct Admitted {
    id: u64,
    busy: Arc<AtomicUsize>,
    close: oneshot::Receiver<()>,
}

impl Connections {
    fn new(limit: usize) -> Connections {
        Connections {
            limit,
            open: Mutex::new(Open::default()),
        }
    }

    /// Room for one more connection. At the limit the oldest connection that is not serving a
    /// request (opened and silent, or kept alive between requests) is closed to make it; `None`
    /// when every connection is in the middle of a request.
    fn admit(&self) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.list.len() >= self.limit {
            let idle = open
                .list
                .iter()
                .position(|c| c.busy.load(Ordering::Acquire) == 0)?;
            let evicted = open.list.remove(idle);
            let _ = evicted.close.send(());
        }
        let id = open.next_id;
        open.next_id += 1;
        let busy = Arc::new(AtomicUsize::new(0));
        let (close, closed) = oneshot::channel();
        open.list.push(Opened {
            id,
            busy: busy.clone(),
            close,
        });
        Some(Admitted {
            id,
            busy,
            close: closed,
        })
    }

    /// The connection `id` has closed.
    fn leave(&self, id: u64) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.list.retain(|c| c.id != id);
    }

    fn count(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .list
            .len()
    }
}

/// Counts one request of a connection in progress until dropped (with its response's body).
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn enter(count: &Arc<AtomicUsize>) -> Busy {
        count.fetch_add(1, Ordering::AcqRel);
        Busy(count.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serve one connection (HTTP/1.1 with keep-alive) until it closes, times out waiting for a
/// request header, is closed to make room, or serve stops.
async fn connection(
    stream: tokio::net::TcpStream,
    app: Router,
    admitted: Admitted,
    connections: Arc<Connections>,
    mut stopping: watch::Receiver<bool>,
) {
    let Admitted { id, busy, close } = admitted;
    let router = hyper_util::service::TowerToHyperService::new(app);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let guard = Busy::enter(&busy);
        let response = hyper::service::Service::call(&router, request);
        async move {
            let response: Response = response.await?;
            // Busy until the body is sent: for /events, as long as the stream lasts.
            Ok::<_, Infallible>(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _ = &guard;
                    frame
                }))
            }))
        }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let conn = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = close => {}
        _ = stopping.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn.as_mut()).await;
        }
    }
    connections.leave(id);
}

async fn read(
    client: &Client,
    pattern: &str,
    limit: usize,
    tracker: &mut Tracker,
) -> Result<Snapshot, Error> {
    let started = Instant::now();
    let mut lines = view::scan(client, pattern, limit).await?;
    tracker.age(&mut lines);
    let took = started.elapsed();
    let metrics = view::prometheus(&lines, true, took);
    let json = json!({"at_ms": view::now_ms(), "pattern": pattern, "locks": lines});
    Ok(Snapshot::new(&json, metrics))
}

/// Why a request is refused, if it is: a Host that is not allowed (403), or a missing or
/// wrong token (401).
fn refuse(app: &App, headers: &HeaderMap, uri: &Uri) -> Option<Response> {
    if !host_allowed(app, headers, uri) {
        return Some(
            (
                StatusCode::FORBIDDEN,
                "polylock serve answers local names only (localhost, a loopback address); \
                 start it with --allow-host NAME to accept another\n",
            )
                .into_response(),
        );
    }
    if !token_given(app, headers, uri) {
        return Some(
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a bearer token is required\n",
            )
                .into_response(),
        );
    }
    None
}

/// Whether the request's Host is one serve answers: a loopback address, localhost or a name
/// under .localhost (which browsers resolve to loopback themselves), or a name of --allow-host.
/// A request without a Host (HTTP/1.0) passes: every browser request carries one.
fn host_allowed(app: &App, headers: &HeaderMap, uri: &Uri) -> bool {
    let Some(allowed) = &app.hosts else {
        return true;
    };
    let host = match headers.get(header::HOST) {
        Some(v) => match v.to_str() {
            Ok(h) => h,
            Err(_) => return false,
        },
        None => match uri.authority() {
            Some(a) => a.as_str(),
            None => return true,
        },
    };
    let name = host_name(host);
    let name = name.trim_end_matches('.');
    let loopback = name
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback());
    loopback
        || name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
}

/// The host of a Host header value (or of a --allow-host value): without its port, IPv6
/// brackets kept.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether the request carries the token, when one was set. An Authorization header, when
/// present, is the credential (`Bearer TOKEN`, the scheme in any case); else `?token=`,
/// percent-decoded (a browser's EventSource cannot send headers, and the page encodes the token
/// with encodeURIComponent). A `+` in the query is a plus, not a space.
fn token_given(app: &App, headers: &HeaderMap, uri: &Uri) -> bool {
    let Some(want) = &app.token else {
        return true;
    };
    let given: Option<Vec<u8>> = match headers.get(header::AUTHORIZATION) {
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim_start().as_bytes().to_vec()),
        None => uri
            .query()
            .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("token=")))
            .map(|raw| percent_encoding::percent_decode_str(raw).collect()),
    };
    given.is_some_and(|g| constant_time_eq(&g, want.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn metrics(State(app): State<App>, headers: HeaderMap, uri: Uri) -> Response {
    if let Some(refusal) = refuse(&app, &headers, &uri) {
        return refusal;
    }
    let text = app.view.borrow().metrics.clone();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

async fn locks(State(app): State<App>, headers: HeaderMap, uri: Uri) -> Response {
    if let Some(refusal) = refuse(&app, &headers, &uri) {
        return refusal;
    }
    let body = app.view.borrow().json.clone();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn events(State(app): State<App>, headers: HeaderMap, uri: Uri) -> Response {
    if let Some(refusal) = refuse(&app, &headers, &uri) {
        return refusal;
    }
    let Ok(subscriber) = app.subscribers.clone().try_acquire_owned() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "10")],
            "polylock serve: too many /events subscribers\n",
        )
            .into_response();
    };
    let stream = changes(app.view.clone(), subscriber);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// The view now, then every new one, as server-sent events (the bytes each snapshot made once),
/// with a comment line after [`KEEP_ALIVE`] without a change. The subscriber's permit is held
/// until the client goes or serve stops.
fn changes(
    mut view: watch::Receiver<Arc<Snapshot>>,
    subscriber: tokio::sync::OwnedSemaphorePermit,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    async_stream(move |tx| async move {
        let _subscriber = subscriber;
        let now = view.borrow_and_update().event.clone();
        if tx.send(Ok(now)).await.is_err() {
            return;
        }
        loop {
            let next = tokio::select! {
                changed = view.changed() => match changed {
                    Ok(()) => view.borrow_and_update().event.clone(),
                    Err(_) => return, // serve is stopping
                },
                () = tokio::time::sleep(KEEP_ALIVE) => Bytes::from_static(b":\n\n"),
                () = tx.closed() => return,
            };
            if tx.send(Ok(next)).await.is_err() {
                return;
            }
        }
    })
}

/// A stream fed by a task through a channel (the task ends when the client goes).
fn async_stream<T, F, Fut>(f: F) -> impl Stream<Item = T>
where
    T: Send + 'static,
    F: FnOnce(tokio::sync::mpsc::Sender<T>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(f(tx));
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

async fn page(State(app): State<App>, headers: HeaderMap, uri: Uri) -> Response {
    if let Some(refusal) = refuse(&app, &headers, &uri) {
        return refusal;
    }
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
            ),
        ],
        PAGE,
    )
        .into_response()
}

/// The live page: no build step and no external asset; the events stream redraws it.
const PAGE: &str = include_str!("serve.html");

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt as _;

    /// Every `/events` subscriber is sent the bytes the snapshot made once (the same buffer),
    /// not a serialization of its own per tick.
    #[tokio::test]
    async fn subscribers_share_one_serialization_per_read() {
        let first = Arc::new(Snapshot::new(&json!({"locks": [1]}), String::new()));
        let (tx, rx) = watch::channel(first.clone());
        let permits = Arc::new(Semaphore::new(2));
        let mut streams: Vec<_> = (0..2)
            .map(|_| {
                Box::pin(changes(
                    rx.clone(),
                    permits.clone().try_acquire_owned().unwrap(),
                ))
            })
            .collect();
        for s in &mut streams {
            let got = s.next().await.unwrap().unwrap();
            assert_eq!(got.as_ptr(), first.event.as_ptr());
        }
        let next = Arc::new(Snapshot::new(&json!({"locks": [2]}), String::new()));
        tx.send_replace(next.clone());
        for s in &mut streams {
            let got = s.next().await.unwrap().unwrap();
            assert_eq!(got.as_ptr(), next.event.as_ptr());
            assert_eq!(&got[..], b"data: {\"locks\":[2]}\n\n");
        }
        // A third subscriber has no permit: the cap is the semaphore's.
        assert!(permits.try_acquire().is_err());
        drop(streams);
    }
}
