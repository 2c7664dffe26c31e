//! The few libuv functions the loop driver needs, resolved from the host process at load time
//! (Node exports its libuv). No libuv is built or linked here: where the host has none (Bun, a
//! stripped binary), [`Uv::get`] is `None` and the binding keeps to the runtime driver.

use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

/// `uv_handle_type` values (uv.h's UV_HANDLE_TYPE_MAP order).
pub(crate) const UV_ASYNC: c_int = 1;
pub(crate) const UV_POLL: c_int = 8;
/// `uv_poll_event` flags.
pub(crate) const UV_READABLE: c_int = 1;
pub(crate) const UV_WRITABLE: c_int = 2;

pub(crate) type Handle = c_void;
pub(crate) type PollCb = unsafe extern "C" fn(handle: *mut Handle, status: c_int, events: c_int);
pub(crate) type AsyncCb = unsafe extern "C" fn(handle: *mut Handle);
pub(crate) type CloseCb = unsafe extern "C" fn(handle: *mut Handle);

type HandleSize = unsafe extern "C" fn(kind: c_int) -> usize;
type PollInit = unsafe extern "C" fn(*mut c_void, *mut Handle, c_int) -> c_int;
type PollStart = unsafe extern "C" fn(*mut Handle, c_int, PollCb) -> c_int;
type HandleOp = unsafe extern "C" fn(*mut Handle) -> c_int;
type AsyncInit = unsafe extern "C" fn(*mut c_void, *mut Handle, AsyncCb) -> c_int;
type Close = unsafe extern "C" fn(*mut Handle, CloseCb);
type Ref = unsafe extern "C" fn(*mut Handle);
type GetData = unsafe extern "C" fn(*const Handle) -> *mut c_void;
type SetData = unsafe extern "C" fn(*mut Handle, *mut c_void);

/// libuv's entry points, as the host process has them.
pub(crate) struct Uv {
    pub(crate) handle_size: HandleSize,
    pub(crate) poll_init_socket: PollInit,
    pub(crate) poll_start: PollStart,
    pub(crate) poll_stop: HandleOp,
    pub(crate) async_init: AsyncInit,
    pub(crate) async_send: HandleOp,
    pub(crate) close: Close,
    pub(crate) r#ref: Ref,
    pub(crate) unref: Ref,
    pub(crate) get_data: GetData,
    pub(crate) set_data: SetData,
}

impl Uv {
    /// The host's libuv, if every function is there.
    pub(crate) fn get() -> Option<&'static Uv> {
        static UV: OnceLock<Option<Uv>> = OnceLock::new();
        UV.get_or_init(resolve).as_ref()
    }
}

fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT looks the name up in the process's global scope; the name
    // is a NUL-terminated string.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

fn resolve() -> Option<Uv> {
    macro_rules! f {
        ($name:literal, $ty:ty) => {
            // SAFETY: the symbol is libuv's function of that name, whose C signature the type
            // states (uv.h, stable since libuv 1.0; the data accessors since 1.19).
            unsafe { std::mem::transmute::<*mut c_void, $ty>(symbol($name)?) }
        };
    }
    Some(Uv {
        handle_size: f!(c"uv_handle_size", HandleSize),
        poll_init_socket: f!(c"uv_poll_init_socket", PollInit),
        poll_start: f!(c"uv_poll_start", PollStart),
        poll_stop: f!(c"uv_poll_stop", HandleOp),
        async_init: f!(c"uv_async_init", AsyncInit),
        async_send: f!(c"uv_async_send", HandleOp),
        close: f!(c"uv_close", Close),
        r#ref: f!(c"uv_ref", Ref),
        unref: f!(c"uv_unref", Ref),
        get_data: f!(c"uv_handle_get_data", GetData),
        set_data: f!(c"uv_handle_set_data", SetData),
    })
}

/// A zeroed handle of `kind`, sized by the host's libuv (`uv_handle_size`).
pub(crate) fn alloc(uv: &Uv, kind: c_int) -> *mut Handle {
    // SAFETY: uv_handle_size answers the size of a handle type; calloc returns memory of that
    // size (or null, checked by the caller through the init call's result).
    unsafe { libc::calloc(1, (uv.handle_size)(kind)) }
}

/// The close callback of every handle [`alloc`] made.
pub(crate) unsafe extern "C" fn free_handle(handle: *mut Handle) {
    crate::boundary::callback("close", || {
        // SAFETY: the handle was allocated by `alloc` and libuv is done with it (closed).
        unsafe { libc::free(handle) }
    })
}
