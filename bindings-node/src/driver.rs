//! The loop driver of a Node environment: polylock's calls run on the environment's own libuv
//! loop (`napi_get_uv_event_loop`, never the default loop), their Redis commands go out on
//! sockets that loop watches, and their Promises are created in the JS call and settled from
//! the loop's callbacks, one handle scope and one callback scope per batch (microtasks run when
//! the batch's scope closes; commands they issue are written with one write after it).
//!
//! Keep-alive: one async handle per environment, referenced only while calls of the user are in
//! flight; socket polls are never referenced, so the watchdog's renewals and pub/sub (which stay
//! on polylock's runtime) never keep Node alive. An async cleanup hook closes every handle, so a
//! worker thread that used polylock exits cleanly.
//!
//! Where libuv is not usable (a host without its symbols) or `POLYLOCK_NODE_DRIVER=runtime`,
//! calls take the runtime driver: each runs on polylock's runtime and settles its Promise
//! through a napi deferred.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi::sys;
use polylock::driver::{Driver, Fd, LoopHost};

use crate::outcome::Outcome;
use crate::uv::{self, Uv};

struct NodeHost {
    uv: &'static Uv,
    uv_loop: *mut c_void,
    polls: Rc<RefCell<HashMap<Fd, *mut uv::Handle>>>,
    async_handle: *mut uv::Handle,
}

impl LoopHost for NodeHost {
    fn watch(&self, fd: Fd, write: bool) -> std::io::Result<()> {
        let uv = self.uv;
        let mut polls = self.polls.borrow_mut();
        let handle = match polls.get(&fd) {
            Some(h) => *h,
            None => {
                let h = uv::alloc(uv, uv::UV_POLL);
                if h.is_null() {
                    return Err(std::io::ErrorKind::OutOfMemory.into());
                }
                // SAFETY: `h` is a zeroed block of uv_handle_size(UV_POLL) bytes and the loop is
                // this environment's, on its thread.
                let rc = unsafe { (uv.poll_init_socket)(self.uv_loop, h, fd) };
                if rc != 0 {
                    // SAFETY: libuv did not take the handle (its init failed).
                    unsafe { libc::free(h) };
                    return Err(std::io::Error::other(format!("uv_poll_init_socket: {rc}")));
                }
                // SAFETY: `h` is an initialised handle of this loop.
                unsafe {
                    (uv.set_data)(h, fd as isize as *mut c_void);
                    (uv.unref)(h);
                }
                polls.insert(fd, h);
                h
            }
        };
        let events = uv::UV_READABLE | if write { uv::UV_WRITABLE } else { 0 };
        // SAFETY: `handle` is an initialised poll handle of this loop.
        let rc = unsafe { (uv.poll_start)(handle, events, on_poll) };
        if rc != 0 {
            return Err(std::io::Error::other(format!("uv_poll_start: {rc}")));
        }
        Ok(())
    }

    fn unwatch(&self, fd: Fd) {
        if let Some(h) = self.polls.borrow_mut().remove(&fd) {
            // SAFETY: `h` is an open poll handle of this loop; it is stopped before its socket
            // closes and freed by its close callback.
            unsafe {
                (self.uv.poll_stop)(h);
                (self.uv.close)(h, uv::free_handle);
            }
        }
    }

    fn keep_alive(&self, yes: bool) {
        // SAFETY: the async handle is open until the environment's cleanup hook closes it, after
        // the driver (the only caller) is closed.
        unsafe {
            if yes {
                (self.uv.r#ref)(self.async_handle)
            } else {
                (self.uv.unref)(self.async_handle)
            }
        }
    }
}

/// The loop driver of the environment on this thread.
pub(crate) struct NodeLoop {
    env: sys::napi_env,
    pub(crate) driver: Driver,
    uv: &'static Uv,
    async_handle: *mut uv::Handle,
    resource: sys::napi_ref,
    context: sys::napi_async_context,
}

thread_local! {
    /// A Node environment lives on one thread (the main thread, or a worker's). A raw `Rc`
    /// (`Rc::into_raw`) with no destructor: at `process.exit` the main thread's thread-locals
    /// are destroyed after the runtime's context, and a driver closing then would panic in a
    /// destructor (an abort); the cleanup hook of a worker's environment frees it instead.
    static LOOP: Cell<*const NodeLoop> = const { Cell::new(std::ptr::null()) };
}

fn current() -> Option<Rc<NodeLoop>> {
    let p = LOOP.with(|l| l.get());
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null pointer here came from `Rc::into_raw` and that reference is still held
    // (the cleanup hook nulls the cell before it gives it up): take one more.
    unsafe {
        Rc::increment_strong_count(p);
        Some(Rc::from_raw(p))
    }
}

/// Which driver `POLYLOCK_NODE_DRIVER` asks for: true for the loop driver (the default).
fn loop_wanted() -> bool {
    static WANTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WANTED.get_or_init(|| match std::env::var("POLYLOCK_NODE_DRIVER").as_deref() {
        Err(_) | Ok("") | Ok("loop") => true,
        Ok("runtime") => false,
        Ok(other) => {
            eprintln!(
                "polylock: POLYLOCK_NODE_DRIVER={other:?} is neither 'loop' nor 'runtime'; using the loop driver"
            );
            true
        }
    })
}

/// The loop driver of `env`, made on first use; `None` when the runtime driver is in use.
pub(crate) fn node_loop(env: &Env) -> Option<Rc<NodeLoop>> {
    if !loop_wanted() {
        return None;
    }
    let raw = env.raw();
    if let Some(l) = current() {
        return (l.env == raw).then_some(l);
    }
    let made = Rc::new(NodeLoop::new(env).ok()?);
    LOOP.with(|l| l.set(Rc::into_raw(made.clone())));
    Some(made)
}

fn check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::from_reason(format!("{what} failed ({status})")))
    }
}

impl NodeLoop {
    fn new(env: &Env) -> Result<NodeLoop> {
        let uv = Uv::get().ok_or_else(|| Error::from_reason("no libuv in this host"))?;
        let uv_loop = env.get_uv_event_loop()? as *mut c_void;
        let raw = env.raw();
        let async_handle = uv::alloc(uv, uv::UV_ASYNC);
        if async_handle.is_null() {
            return Err(Error::from_reason("out of memory"));
        }
        // SAFETY: a zeroed block of uv_handle_size(UV_ASYNC) bytes, this environment's loop.
        let rc = unsafe { (uv.async_init)(uv_loop, async_handle, on_async) };
        if rc != 0 {
            // SAFETY: libuv did not take the handle.
            unsafe { libc::free(async_handle) };
            return Err(Error::from_reason(format!("uv_async_init: {rc}")));
        }
        // SAFETY: an initialised handle of this loop; unreferenced until calls are in flight.
        unsafe { (uv.unref)(async_handle) };
        let mut resource = null_mut();
        let mut context = null_mut();
        // SAFETY: napi calls on the environment's thread, inside a JS call.
        unsafe {
            let mut object = null_mut();
            check(
                sys::napi_create_object(raw, &mut object),
                "napi_create_object",
            )?;
            check(
                sys::napi_create_reference(raw, object, 1, &mut resource),
                "napi_create_reference",
            )?;
            let mut name = null_mut();
            check(
                sys::napi_create_string_utf8(raw, c"polylock".as_ptr(), 8, &mut name),
                "napi_create_string_utf8",
            )?;
            check(
                sys::napi_async_init(raw, object, name, &mut context),
                "napi_async_init",
            )?;
            let mut remove = null_mut();
            check(
                sys::napi_add_async_cleanup_hook(raw, Some(cleanup), null_mut(), &mut remove),
                "napi_add_async_cleanup_hook",
            )?;
        }
        let wake_handle = async_handle as usize;
        let host = NodeHost {
            uv,
            uv_loop,
            polls: Rc::default(),
            async_handle,
        };
        let driver = Driver::new(
            Box::new(host),
            Box::new(move || {
                // SAFETY: the driver stops calling this before the cleanup hook closes the
                // handle; uv_async_send is the one libuv call safe from any thread.
                unsafe { (uv.async_send)(wake_handle as *mut uv::Handle) };
            }),
        );
        Ok(NodeLoop {
            env: raw,
            driver,
            uv,
            async_handle,
            resource,
            context,
        })
    }

    /// One loop callback of the driver (see [`Driver::callback`]), each batch inside scopes.
    fn batch(&self, f: impl FnOnce(&Driver)) {
        self.driver.callback(&|work| self.in_scopes(work), f);
    }

    /// Run `work` inside a handle scope and a callback scope, so that the Promises it settles
    /// run their reactions when the scope closes. A panic in `work` is caught here, inside the
    /// scopes (which are then closed as always) and inside the driver's batch (which then ends
    /// as always): the futures of calls catch their own (`boundary::caught`), so one here came
    /// from the driver itself.
    fn in_scopes(&self, work: &mut dyn FnMut()) {
        let env = self.env;
        let mut handles = null_mut();
        let mut scope = null_mut();
        // SAFETY: napi calls on the environment's thread from a libuv callback of its loop; the
        // scopes are closed below in reverse order.
        unsafe {
            sys::napi_open_handle_scope(env, &mut handles);
            let mut resource = null_mut();
            sys::napi_get_reference_value(env, self.resource, &mut resource);
            sys::napi_open_callback_scope(env, resource, self.context, &mut scope);
        }
        crate::boundary::callback("batch", work);
        // SAFETY: as above.
        unsafe {
            sys::napi_close_callback_scope(env, scope);
            sys::napi_close_handle_scope(env, handles);
        }
    }

    /// Run `fut` on the loop; its outcome settles the returned Promise.
    pub(crate) fn promise<'e, T, F>(&self, env: &'e Env, fut: F) -> Result<Object<'e>>
    where
        T: ToNapiValue + 'static,
        F: std::future::Future<Output = T> + 'static,
    {
        let raw = env.raw();
        let mut deferred = null_mut();
        let mut promise = null_mut();
        // SAFETY: inside a JS call on the environment's thread.
        check(
            unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) },
            "napi_create_promise",
        )?;
        self.driver.spawn(fut, move |o| {
            let settle = move || {
                // SAFETY: `done` runs on the environment's thread, inside a JS call or a batch's
                // scopes; the deferred is resolved once.
                unsafe {
                    if let Ok(v) = T::to_napi_value(raw, o) {
                        sys::napi_resolve_deferred(raw, deferred, v);
                    }
                }
            };
            if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(settle)) {
                let o = crate::boundary::panicked(crate::boundary::message(payload));
                // SAFETY: as above; the deferred was not resolved (its conversion panicked).
                unsafe {
                    if let Ok(v) = Outcome::to_napi_value(raw, o) {
                        sys::napi_resolve_deferred(raw, deferred, v);
                    }
                }
            }
        });
        Ok(Object::from_raw(raw, promise))
    }
}

unsafe extern "C" fn on_poll(handle: *mut uv::Handle, status: c_int, events: c_int) {
    crate::boundary::callback("poll", || {
        let Some(l) = current() else { return };
        // SAFETY: the handle is one of this loop's poll handles, its data the watched descriptor.
        let fd = unsafe { (l.uv.get_data)(handle) } as isize as Fd;
        let readable = status < 0 || events & uv::UV_READABLE != 0;
        let writable = events & uv::UV_WRITABLE != 0;
        l.batch(|d| d.io_ready(fd, readable, writable));
    })
}

unsafe extern "C" fn on_async(_handle: *mut uv::Handle) {
    crate::boundary::callback("async", || {
        if let Some(l) = current() {
            l.batch(|d| d.woken());
        }
    })
}

/// The environment is going away: close the driver (its futures are dropped, its sockets
/// unwatched and closed), then the async handle; the hook is removed once libuv closed it.
unsafe extern "C" fn cleanup(hook: sys::napi_async_cleanup_hook_handle, _arg: *mut c_void) {
    crate::boundary::callback("cleanup", || close_loop(hook))
}

fn close_loop(hook: sys::napi_async_cleanup_hook_handle) {
    let p = LOOP.with(|l| l.replace(std::ptr::null()));
    // SAFETY: the cell's reference, given up here (the cell is null from now on).
    let Some(l) = (!p.is_null()).then(|| unsafe { Rc::from_raw(p) }) else {
        // SAFETY: the handle napi gave this hook.
        unsafe { sys::napi_remove_async_cleanup_hook(hook) };
        return;
    };
    l.driver.close();
    // SAFETY: the environment is still valid while its cleanup hooks run; the handle is open
    // and nothing calls uv_async_send on it any more (the driver is closed).
    unsafe {
        sys::napi_async_destroy(l.env, l.context);
        sys::napi_delete_reference(l.env, l.resource);
        (l.uv.set_data)(l.async_handle, hook as *mut c_void);
        (l.uv.close)(l.async_handle, async_closed);
    }
}

unsafe extern "C" fn async_closed(handle: *mut uv::Handle) {
    crate::boundary::callback("close", || {
        let Some(uv) = Uv::get() else { return };
        // SAFETY: the async handle of a cleanup hook, closed; its data is that hook's handle.
        unsafe {
            let hook = (uv.get_data)(handle) as sys::napi_async_cleanup_hook_handle;
            libc::free(handle);
            sys::napi_remove_async_cleanup_hook(hook);
        }
    })
}

/// Run `fut` on the environment's loop driver (see `driver.rs`), or else spawn it on
/// polylock's runtime; its outcome settles the returned Promise (the `PANIC` outcome if it
/// panicked: see `boundary.rs`).
pub(crate) fn promise<T, F>(env: &Env, fut: F) -> Result<Object<'_>>
where
    T: ToNapiValue + Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
{
    let fut = crate::boundary::caught(fut);
    if let Some(l) = node_loop(env) {
        return l.promise(env, fut);
    }
    let (deferred, promise) = env.create_deferred::<Either<T, Outcome>, _>()?;
    polylock::runtime::handle().spawn(async move {
        let o = fut.await;
        deferred.resolve(move |_| Ok(o));
    });
    Ok(promise)
}
