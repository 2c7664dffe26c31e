//! The count-down latch (Redisson's `RCountDownLatch` on Redis, a Curator `SharedCount` on
//! ZooKeeper): waiters wake when the count reaches zero.

use std::sync::Arc;

use crate::backend::LatchOps;
use crate::hold::ClientCore;
use crate::metrics::{Outcome, Prim, Track};
use crate::model::error::{Error, Result};
use crate::model::options::Wait;

/// A count-down latch handle. Cheap to clone.
#[derive(Clone)]
pub struct CountDownLatch {
    core: Arc<ClientCore>,
    name: Arc<str>,
    ops: Arc<dyn LatchOps>,
    track: Track,
}

impl std::fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountDownLatch")
            .field("name", &self.name)
            .finish()
    }
}

impl CountDownLatch {
    pub(crate) fn new(core: Arc<ClientCore>, name: &str) -> Result<CountDownLatch> {
        let ops = core.backend.latch_ops()?;
        let name: Arc<str> = Arc::from(name);
        let track = core.metrics.track(Prim::Latch, &name);
        Ok(CountDownLatch {
            core,
            name,
            ops,
            track,
        })
    }

    /// The latch's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Set the count if the latch is not counting (Redisson's `trySetCount`); true if this call
    /// set it. The count must be at least 1.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        self.core.check_usable()?;
        if count == 0 {
            return Err(Error::invalid("a latch's count must be at least 1, got 0"));
        }
        self.ops.try_set_count(&self.name, count).await
    }

    /// Count down by one; at zero the latch opens and every waiter wakes. On an open latch it
    /// does nothing.
    pub async fn count_down(&self) -> Result<()> {
        self.core.check_usable()?;
        self.ops.count_down(&self.name).await
    }

    /// The count now (0 when open).
    pub async fn count(&self) -> Result<u64> {
        self.core.check_usable()?;
        self.ops.count(&self.name).await
    }

    /// Wait until the count is zero, woken by the server's notification; false if `wait` ran
    /// out first. Closing the client ends the wait with `InvalidState`.
    pub async fn wait(&self, wait: Wait) -> Result<bool> {
        self.core.check_usable()?;
        let wait = wait.checked()?;
        let stop = self.core.stop.clone();
        let waiting = self.track.waiting();
        let r = tokio::select! {
            biased;
            r = self.ops.wait(&self.name, wait, self.core.options.watchdog_timeout) => r,
            _ = stop.cancelled() => Err(Error::state("the polylock client was closed while this wait went on")),
        };
        waiting.done(match r {
            Ok(true) => Outcome::Acquired,
            Ok(false) => Outcome::NotAcquired,
            Err(_) => Outcome::Error,
        });
        r
    }

    /// Delete the latch: it opens (its waiters wake); true if it was counting.
    pub async fn delete(&self) -> Result<bool> {
        self.core.check_usable()?;
        self.ops.delete(&self.name).await
    }
}
