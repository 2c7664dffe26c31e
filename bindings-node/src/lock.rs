//! `NativeLock`: one handle for every lock kind; every call names its owner and settles a
//! Promise. `CancelToken` cancels a waiting acquire (for `AbortSignal`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{AcquireOptions, ErrorKind, LeaseChange, Lock, MultiLock};

use crate::boundary::entry;
use crate::cancel::{aborted, CancelToken, Ran};
use crate::convert::{lease_arg, ms, wait_arg};
use crate::driver::promise;
use crate::outcome::{answer, failed, outcome, sync_err};

/// A lock handle (see `index.js`); every call names its owner.
#[napi]
pub struct NativeLock {
    inner: Lock,
}

impl NativeLock {
    pub(crate) fn new(inner: Lock) -> NativeLock {
        NativeLock { inner }
    }
}

/// Collects the members of a multi-lock (a Promise-free way to pass several native handles).
#[napi]
pub struct MultiLockBuilder {
    members: Vec<Lock>,
}

#[napi]
impl MultiLockBuilder {
    /// No members yet.
    #[napi(constructor)]
    pub fn new() -> Result<Self> {
        entry(|| {
            Ok(MultiLockBuilder {
                members: Vec::new(),
            })
        })
    }

    /// Add a member.
    #[napi]
    pub fn add(&mut self, lock: &NativeLock) -> Result<()> {
        entry(|| {
            self.members.push(lock.inner.clone());
            Ok(())
        })
    }

    /// The multi-lock over the members added (see `MultiLock` in index.js).
    #[napi]
    pub fn build(&mut self) -> Result<NativeLock> {
        entry(|| {
            MultiLock::new(std::mem::take(&mut self.members))
                .map(NativeLock::new)
                .map_err(sync_err)
        })
    }
}

#[napi]
impl NativeLock {
    /// The lock's name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {
        entry(|| Ok(self.inner.name().to_string()))
    }

    /// `reentrant`, `mutex`, `read`, `write` or `fair` (a multi-lock: `multi`).
    #[napi(getter)]
    pub fn kind(&self) -> Result<&'static str> {
        entry(|| {
            Ok(if self.inner.is_multi() {
                "multi"
            } else {
                self.inner.kind().name()
            })
        })
    }

    /// Acquire: resolves `value` true when held, false when `waitMs` ran out; a cancelled
    /// token resolves `{ ok: false, code: "CANCELLED" }`.
    #[napi]
    pub fn acquire<'e>(
        &self,
        env: &'e Env,
        owner: f64,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        token: Option<&CancelToken>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let wait = wait_arg(wait_ms)?;
            let lease = lease_arg(lease_ms)?;
            let owner = owner as u64;
            let lock = self.inner.clone();
            let token = CancelToken::state_of(token);
            promise(env, async move {
                answer(
                    match token
                        .run(lock.acquire(owner, AcquireOptions { wait, lease }))
                        .await
                    {
                        Ran::Aborted => aborted(),
                        Ran::AbortedAfter(_) => {
                            let _ = lock.release(owner).await; // aborted as it arrived: give it back
                            aborted()
                        }
                        Ran::Done(Ok(_)) => outcome(true, None),
                        Ran::Done(Err(e)) if e.kind() == ErrorKind::Timeout => outcome(false, None),
                        Ran::Done(Err(e)) => failed(&e),
                    },
                )
            })
        })
    }

    /// Release one hold of `owner`.
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, owner: f64) -> Result<Object<'e>> {
        entry(|| {
            let lock = self.inner.clone();
            promise(env, async move {
                answer(match lock.release(owner as u64).await {
                    Ok(r) => outcome(r == polylock::Released::Freed, None),
                    Err(e) => failed(&e),
                })
            })
        })
    }

    /// Whether anybody holds the lock.
    #[napi]
    pub fn is_locked<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let lock = self.inner.clone();
            promise(env, async move {
                match lock.is_locked().await {
                    Ok(b) => outcome(b, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Delete the lock whoever holds it.
    #[napi]
    pub fn force_unlock<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let lock = self.inner.clone();
            promise(env, async move {
                match lock.force_unlock().await {
                    Ok(b) => outcome(b, None),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Remaining lease: `value` false when nobody holds the lock; else `number`, the ms left, or
    /// -1 when held with no expiry.
    #[napi]
    pub fn remaining_lease<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        entry(|| {
            let lock = self.inner.clone();
            promise(env, async move {
                match lock.remaining_lease().await {
                    Ok(left) => outcome(left.is_held(), Some(left.as_millis_code() as f64)),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Change `owner`'s fixed lease: `how` is `set` (`ms` from now), `add` (`ms` more) or
    /// `reset` (its original length); `number` is the new lease in ms.
    #[napi]
    pub fn extend_lease<'e>(
        &self,
        env: &'e Env,
        owner: f64,
        how: String,
        amount_ms: Option<f64>,
    ) -> Result<Object<'e>> {
        entry(|| {
            let amount = || {
                amount_ms
                    .map(|v| ms(v, "ms"))
                    .transpose()
                    .map_err(sync_err)?
                    .ok_or_else(|| {
                        sync_err(polylock::Error::new(
                            ErrorKind::InvalidArgument,
                            "ms must be a positive number of milliseconds",
                        ))
                    })
            };
            let change = match how.as_str() {
                "set" => LeaseChange::Set(amount()?),
                "add" => LeaseChange::Add(amount()?),
                "reset" => LeaseChange::Reset,
                other => {
                    return Err(sync_err(polylock::Error::new(
                        ErrorKind::InvalidArgument,
                        format!("unknown lease change '{other}'"),
                    )))
                }
            };
            let lock = self.inner.clone();
            let owner = owner as u64;
            promise(env, async move {
                match lock.extend_lease(owner, change).await {
                    Ok(d) => outcome(true, Some(d.as_millis() as f64)),
                    Err(e) => failed(&e),
                }
            })
        })
    }

    /// Why `owner`'s hold was lost (`DELETED`, ...), or none while it is not lost.
    #[napi]
    pub fn lost_reason(&self, owner: f64) -> Result<Option<String>> {
        entry(|| {
            Ok(self.inner.members().iter().find_map(|m| {
                match m.lost_signal(owner as u64).map(|s| s.state()) {
                    Some(polylock::HoldState::Lost(r)) => Some(r.name().to_string()),
                    _ => None,
                }
            }))
        })
    }

    /// The fencing token of `owner`'s hold, if it holds one (no round trip).
    #[napi]
    pub fn fencing_token(&self, owner: f64) -> Result<Option<f64>> {
        entry(|| Ok(self.inner.fencing_token(owner as u64).map(|t| t as f64)))
    }

    /// True if `owner`'s hold was lost and not yet released.
    #[napi]
    pub fn is_lost(&self, owner: f64) -> Result<bool> {
        entry(|| {
            Ok(self
                .inner
                .lost_signal(owner as u64)
                .is_some_and(|s| s.is_lost()))
        })
    }
}
