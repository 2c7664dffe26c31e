//! The host-loop driver (`polylock::driver`) on a loop of this test's own (poll(2) over the
//! sockets the driver asks it to watch), against the real Redis of scripts/servers.sh: calls
//! run on the loop's thread, their commands go out on the loop's connection, and what the
//! runtime's path does (the same lock logic) they do too.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use polylock::driver::{Driver, Fd, LoopHost};
use polylock::{AcquireOptions, Client, ErrorKind};

fn redis_url() -> String {
    std::env::var("POLYLOCK_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

fn unique(tag: &str) -> String {
    format!("loop-driver:{tag}:{}", polylock::owner::fresh())
}

#[derive(Default)]
struct Watched {
    fds: HashMap<Fd, bool>,
    alive: bool,
}

struct TestHost(Rc<RefCell<Watched>>);

impl LoopHost for TestHost {
    fn watch(&self, fd: Fd, write: bool) -> std::io::Result<()> {
        self.0.borrow_mut().fds.insert(fd, write);
        Ok(())
    }
    fn unwatch(&self, fd: Fd) {
        self.0.borrow_mut().fds.remove(&fd);
    }
    fn keep_alive(&self, yes: bool) {
        self.0.borrow_mut().alive = yes;
    }
}

/// A loop: poll(2) over the watched sockets, the driver's wake as a flag.
struct TestLoop {
    driver: Driver,
    watched: Rc<RefCell<Watched>>,
    woken: Arc<AtomicBool>,
}

impl TestLoop {
    fn new() -> TestLoop {
        let watched = Rc::new(RefCell::new(Watched::default()));
        let woken = Arc::new(AtomicBool::new(false));
        let w = woken.clone();
        let driver = Driver::new(
            Box::new(TestHost(watched.clone())),
            Box::new(move || w.store(true, Ordering::SeqCst)),
        );
        TestLoop {
            driver,
            watched,
            woken,
        }
    }

    /// Run the loop until `done` or `limit` passed; false on the limit.
    fn run_until(&self, limit: Duration, done: impl Fn() -> bool) -> bool {
        let end = Instant::now() + limit;
        while !done() {
            if Instant::now() > end {
                return false;
            }
            self.once();
        }
        true
    }

    fn once(&self) {
        let mut fds: Vec<libc::pollfd> = self
            .watched
            .borrow()
            .fds
            .iter()
            .map(|(fd, write)| libc::pollfd {
                fd: *fd,
                events: libc::POLLIN | if *write { libc::POLLOUT } else { 0 },
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a valid array of pollfd of the length given.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1) };
        let woken = self.woken.swap(false, Ordering::SeqCst);
        for p in &fds {
            if p.revents != 0 {
                self.driver.callback(&|work| work(), |d| {
                    d.io_ready(
                        p.fd,
                        p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0,
                        p.revents & libc::POLLOUT != 0,
                    )
                });
            }
        }
        if woken {
            self.driver.callback(&|work| work(), |d| d.woken());
        }
    }

    /// A first call on `lock`, then the loop until its connection (made meanwhile) is there.
    fn warm(&self, lock: &polylock::Lock) {
        self.run({
            let lock = lock.clone();
            async move { lock.is_locked().await }
        })
        .unwrap();
        assert!(self.run_until(Duration::from_secs(5), || self.driver.connections() == 1));
    }

    /// Run `fut` on the loop and drive the loop until it is done.
    fn run<T: 'static>(&self, fut: impl std::future::Future<Output = T> + 'static) -> T {
        let out = Rc::new(RefCell::new(None));
        let o = out.clone();
        self.driver.spawn(fut, move |v| *o.borrow_mut() = Some(v));
        assert!(
            self.run_until(Duration::from_secs(20), || out.borrow().is_some()),
            "the call did not finish in 20 s"
        );
        let v = out.borrow_mut().take().unwrap();
        v
    }
}

fn connect(url: &str) -> Client {
    polylock::runtime::block_on({
        let url = url.to_string();
        async move { Client::connect(&url).await }
    })
    .unwrap()
    .unwrap()
}

#[test]
fn calls_run_on_the_loops_own_connection_and_keep_the_lock_logic() {
    let client = connect(&redis_url());
    let l = TestLoop::new();
    let lock = client.lock(&unique("pairs")).unwrap();
    // The first call takes the runtime's path while the loop's connection is made.
    let held = l.run({
        let lock = lock.clone();
        async move { lock.acquire(1, AcquireOptions::default()).await }
    });
    assert_eq!(held.unwrap().hold_count, 1);
    assert!(l.run_until(Duration::from_secs(5), || l.driver.connections() == 1));
    // Reentrancy, ownership and release, now on the loop's connection.
    let (again, other, count) = l.run({
        let lock = lock.clone();
        async move {
            let again = lock.acquire(1, AcquireOptions::default()).await;
            let other = lock.acquire(2, AcquireOptions::try_once()).await;
            let count = lock.hold_count(1).await;
            (again, other, count)
        }
    });
    assert_eq!(again.unwrap().hold_count, 2);
    assert_eq!(other.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(count.unwrap(), 2);
    let wrong = l.run({
        let lock = lock.clone();
        async move { lock.release(2).await }
    });
    assert_eq!(wrong.unwrap_err().kind(), ErrorKind::NotOwner);
    for _ in 0..2 {
        l.run({
            let lock = lock.clone();
            async move { lock.release(1).await }
        })
        .unwrap();
    }
    let locked = l.run({
        let lock = lock.clone();
        async move { lock.is_locked().await }
    });
    assert!(!locked.unwrap());
    assert_eq!(l.driver.in_flight(), 0);
    assert!(
        !l.watched.borrow().alive,
        "nothing in flight keeps the host alive"
    );
    drop(l);
    client_close(client);
}

/// The local address of the socket `fd` (the client's address as the server sees it).
fn local_addr(fd: Fd) -> std::net::SocketAddr {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` is an open socket the driver owns; ManuallyDrop keeps it from being closed.
    let s = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
    s.local_addr().unwrap()
}

fn client_close(client: Client) {
    polylock::runtime::block_on(async move { client.close().await })
        .unwrap()
        .unwrap();
}

#[test]
fn many_calls_in_flight_keep_a_counter_exact() {
    let client = connect(&redis_url());
    let l = TestLoop::new();
    let name = unique("counter");
    let counter = Rc::new(RefCell::new((0u32, 0u32))); // (inside now, total)
    let finished = Rc::new(RefCell::new(0));
    let lock = client.lock(&name).unwrap();
    l.warm(&lock);
    let tasks = 16;
    let rounds = 25;
    for owner in 0..tasks {
        let lock = lock.clone();
        let counter = counter.clone();
        let f = finished.clone();
        l.driver.spawn(
            async move {
                for _ in 0..rounds {
                    lock.acquire(
                        100 + owner,
                        AcquireOptions::wait_for(Duration::from_secs(10)),
                    )
                    .await?;
                    {
                        let mut c = counter.borrow_mut();
                        assert_eq!(c.0, 0, "two holders at once");
                        c.0 += 1;
                        c.1 += 1;
                    }
                    // Hold across a round trip, so that the others really wait.
                    lock.hold_count(100 + owner).await?;
                    counter.borrow_mut().0 -= 1;
                    lock.release(100 + owner).await?;
                }
                polylock::Result::<()>::Ok(())
            },
            move |r| {
                r.unwrap();
                *f.borrow_mut() += 1;
            },
        );
    }
    assert!(l.run_until(Duration::from_secs(60), || *finished.borrow() == tasks));
    assert_eq!(counter.borrow().1, (tasks * rounds) as u32);
    drop(l);
    client_close(client);
}

#[test]
fn the_loops_connection_closes_with_its_client() {
    let client = connect(&redis_url());
    let l = TestLoop::new();
    let lock = client.lock(&unique("close")).unwrap();
    l.warm(&lock);
    let closing = client.clone();
    l.run(async move { closing.close().await }).unwrap();
    assert_eq!(l.driver.connections(), 0);
    assert!(l.watched.borrow().fds.is_empty(), "the socket is unwatched");
    // Use after close is a typed error, on the loop as elsewhere.
    let after = l.run(async move { lock.is_locked().await });
    assert_eq!(after.unwrap_err().kind(), ErrorKind::InvalidState);
}

#[test]
fn a_killed_connection_fails_typed_or_goes_on_and_the_loop_reconnects() {
    let client = connect(&redis_url());
    let l = TestLoop::new();
    let name = unique("killed");
    let lock = client.lock(&name).unwrap();
    l.warm(&lock);
    // Kill the loop's connection on the server, by the address it has there: only this test's
    // (the other tests of this file run beside it, each on a loop connection of its own).
    let fds: Vec<_> = l.watched.borrow().fds.keys().copied().collect();
    assert_eq!(fds.len(), 1, "the loop watches its one connection");
    let addr = local_addr(fds[0]);
    let admin = redis::Client::open(redis_url()).unwrap();
    let mut c = admin.get_connection().unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ADDR")
        .arg(addr.to_string())
        .arg("SKIPME")
        .arg("yes")
        .query(&mut c)
        .unwrap();
    assert_eq!(killed, 1, "the loop's connection {addr} is on the server");
    let after = l.run({
        let lock = lock.clone();
        async move { lock.acquire(1, AcquireOptions::default()).await }
    });
    if let Err(e) = &after {
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    }
    // Within a few seconds calls succeed again, on a new loop connection.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = l.run({
            let lock = lock.clone();
            async move { lock.acquire(1, AcquireOptions::default()).await }
        });
        if r.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "no recovery: {:?}", r.err());
    }
    assert!(l.run_until(Duration::from_secs(5), || l.driver.connections() == 1));
    let status = l.run({
        let lock = lock.clone();
        async move { lock.force_unlock().await }
    });
    assert!(status.unwrap());
    drop(l);
    client_close(client);
}
