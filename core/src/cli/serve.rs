//! `polylock serve`: the server's view for Prometheus (`/metrics`), as JSON (`/api/locks`), as
//! server-sent events (`/events`) and as a live page (`/`). Read-only: nothing it serves
//! changes a lock.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::stream::Stream;
use serde_json::{json, Value};
use tokio::sync::watch;

use super::view::{self, Tracker};
use crate::{Client, Error, ErrorKind};

/// One view of the server, as every route serves it.
struct Snapshot {
    json: Value,
    metrics: String,
}

#[derive(Clone)]
struct App {
    view: watch::Receiver<Arc<Snapshot>>,
    token: Option<Arc<str>>,
    /// The Host names accepted besides loopback ones; `None`: no Host check (a non-loopback
    /// address without --allow-host).
    hosts: Option<Arc<[String]>>,
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
}

/// Serve until SIGINT or SIGTERM.
pub(super) async fn serve(client: &Client, pattern: &str, options: Options) -> Result<u8, Error> {
    let Options {
        listen,
        token,
        allow_hosts,
        interval,
        limit,
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
        eprintln!(
            "polylock serve: listening on {bound}, beyond this machine, without --token: anyone \
             who can reach it sees the lock names and holders"
        );
    }
    // The address first, on its own line (a caller that asked for port 0 learns the port).
    println!("polylock serve: http://{bound}/ (metrics: http://{bound}/metrics)");
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
                        eprintln!("polylock serve: reading the server failed: {e}");
                        let json =
                            json!({"at_ms": view::now_ms(), "error": e.to_string(), "locks": []});
                        let metrics = view::prometheus(&[], false, Duration::ZERO);
                        tx.send_replace(Arc::new(Snapshot { json, metrics }));
                    }
                }
            }
        }
    };
    let mut signals = super::Signals::new()?;
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        signals.next().await;
    });
    tokio::select! {
        r = server => r.map_err(|e| Error::new(ErrorKind::Connection, format!("serving: {e}")))?,
        _ = poller => {}
    }
    Ok(0)
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
    Ok(Snapshot { json, metrics })
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
    let body = app.view.borrow().json.to_string();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn events(State(app): State<App>, headers: HeaderMap, uri: Uri) -> Response {
    if let Some(refusal) = refuse(&app, &headers, &uri) {
        return refusal;
    }
    Sse::new(changes(app.view.clone()))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The view now, then every new one.
fn changes(
    mut view: watch::Receiver<Arc<Snapshot>>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream(move |tx| async move {
        let now = view.borrow_and_update().json.to_string();
        if tx.send(Ok(Event::default().data(now))).await.is_err() {
            return;
        }
        while view.changed().await.is_ok() {
            let next = view.borrow_and_update().json.to_string();
            if tx.send(Ok(Event::default().data(next))).await.is_err() {
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
