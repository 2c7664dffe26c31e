//! A benchmark hook: the same pairs through the Rust API, to compare with the C API in one run.

use std::time::Instant;

use polylock::{runtime, AcquireOptions, Error};

use crate::lock::{lock_ref, polylock_lock};
use crate::result::{block, boundary, fail, null, polylock_result, POLYLOCK_OK};

/// For the benchmark: `n` uncontended acquire+release pairs of `owner` through the Rust API, p50
/// in ns in `*out_p50_ns`, to compare with the same loop through the C API. `on_caller_thread`:
/// false runs the async loop as a task on polylock's runtime (what an async Rust program pays);
/// true blocks this thread for each call, as the C API does (what the C boundary alone adds).
#[no_mangle]
pub unsafe extern "C" fn polylock_bench_rust_pairs(
    lock: *mut polylock_lock,
    owner: u64,
    n: u32,
    on_caller_thread: bool,
    out_p50_ns: *mut u64,
) -> polylock_result {
    boundary(|| {
        if out_p50_ns.is_null() || n == 0 {
            return null("out_p50_ns");
        }
        // SAFETY: caller contract.
        let l = match unsafe { lock_ref(lock) } {
            Ok(l) => l,
            Err(r) => return r,
        };
        let lk = l.inner.clone();
        if on_caller_thread {
            let mut v = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let t = Instant::now();
                let (a, b) = (lk.clone(), lk.clone());
                if let Err(e) =
                    block(async move { a.acquire(owner, AcquireOptions::forever()).await })
                        .and_then(|_| block(async move { b.release(owner).await }))
                {
                    return fail(&e);
                }
                v.push(t.elapsed());
            }
            v.sort();
            // SAFETY: checked above.
            unsafe { *out_p50_ns = v[v.len() / 2].as_nanos() as u64 };
            return POLYLOCK_OK;
        }
        // As an async Rust program runs it: a task on the runtime, not a blocked caller thread.
        let task = runtime::spawn(async move {
            let mut v = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let t = Instant::now();
                lk.acquire(owner, AcquireOptions::forever()).await?;
                lk.release(owner).await?;
                v.push(t.elapsed());
            }
            v.sort();
            Ok::<u64, Error>(v[v.len() / 2].as_nanos() as u64)
        });
        let r = task.and_then(|t| t.wait()).and_then(|r| r);
        match r {
            Ok(p50) => {
                // SAFETY: checked above.
                unsafe { *out_p50_ns = p50 };
                POLYLOCK_OK
            }
            Err(e) => fail(&e),
        }
    })
}
