//! The watchdog: one task per client renews every watchdog-kept hold, whatever its kind and
//! backend, in batches every third of the lease, and declares holds lost when their lease ends.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use std::time::{Duration, Instant};

use super::{ClientCore, HoldKey, LeaseMode};
use crate::backend::RenewItem;
use crate::model::kind::HoldKind;
use crate::model::lost::LostReason;

/// Most holds renewed by one call to a backend (Redisson >= 3.44 batches 100 keys per script).
pub(crate) const RENEW_BATCH: usize = 100;

/// The watchdog loop of one client. Holds only a weak reference between rounds, so a dropped
/// client ends it.
pub(crate) async fn run(client: Weak<ClientCore>) {
    let Some(first) = client.upgrade() else {
        return;
    };
    let lease = first.options.watchdog_timeout;
    let interval = lease / 3;
    let retry = (lease / 10).max(Duration::from_millis(50)).min(interval);
    let stop = first.stop.clone();
    let wake = first.wake.clone();
    drop(first);
    let mut next_round = Instant::now() + interval;
    loop {
        let Some(core) = client.upgrade() else {
            return;
        };
        if stop.is_cancelled() {
            return;
        }
        let now = Instant::now();
        let busy = |key: &HoldKey| core.gates.is_busy(key);
        core.holds.expire(now, busy);
        if now >= next_round {
            publish_identity(&core).await;
            let ok = renew_round(&core, lease, interval).await;
            next_round = Instant::now() + if ok { interval } else { retry };
        }
        let wake_at = core
            .holds
            .expire(Instant::now(), busy)
            .map_or(next_round, |d| d.min(next_round));
        // Between rounds the task holds no strong reference: a dropped client ends it.
        drop(core);
        let woken = wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep_until(wake_at.into()) => {}
            _ = woken => {}
        }
    }
}

/// Publish the client's identity again, to live one lease (Redis; a no-op elsewhere). A failure
/// is only logged: the next round tries again, and no hold depends on it.
pub(crate) async fn publish_identity(core: &ClientCore) {
    let ttl = core.options.watchdog_timeout;
    let published = tokio::time::timeout(
        core.options.command_timeout,
        core.backend.publish_identity(&core.id, &core.identity, ttl),
    )
    .await;
    if !matches!(published, Ok(Ok(()))) {
        tracing::debug!("polylock: publishing the client's identity failed; trying next round");
    }
}

/// The names of a batch of holds, for the log (the first few).
fn names(batch: &[(HoldKey, u64, Option<String>)]) -> String {
    let mut out: Vec<&str> = batch
        .iter()
        .take(5)
        .map(|((name, _, _), _, _)| &**name)
        .collect();
    out.dedup();
    let more = batch.len().saturating_sub(5);
    let mut s = out.join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// Renew every live watchdog hold; false if any batch failed (the next round comes sooner).
async fn renew_round(core: &Arc<ClientCore>, lease: Duration, interval: Duration) -> bool {
    // Each entry remembers the hold's fencing token: a reply that comes back after the hold was
    // released and the same owner took the lock again (a new hold under the same key) must not
    // judge the new hold. Blocked callers release on connections of their own, so a renewal may
    // run on the server between such a release and the next acquire.
    let mut by_kind: BTreeMap<HoldKind, Vec<(HoldKey, u64, Option<String>)>> = BTreeMap::new();
    {
        let map = core.holds.lock();
        for (k, h) in map.iter() {
            if h.lost.is_none() && h.lease == LeaseMode::Watchdog {
                by_kind
                    .entry(k.1)
                    .or_default()
                    .push((k.clone(), h.token, h.node.clone()));
            }
        }
    }
    let mut ok = true;
    for (kind, batch) in by_kind {
        let ops = match core.hold_ops(kind) {
            Ok(ops) => ops,
            Err(e) => {
                // Not expected (a hold exists only where its kind has operations); the holds
                // run out at their deadline and are then declared lost, never kept silently.
                tracing::error!(
                    kind = kind.word(),
                    "polylock watchdog: cannot renew {} hold(s) ({}): {e}",
                    batch.len(),
                    names(&batch)
                );
                ok = false;
                continue;
            }
        };
        for chunk in batch.chunks(RENEW_BATCH) {
            let sent_at = Instant::now();
            let holds: Vec<RenewItem> = chunk
                .iter()
                .map(|((name, _, owner), _, node)| RenewItem {
                    name: name.clone(),
                    owner: *owner,
                    node: node.clone(),
                })
                .collect();
            let limit = core.options.command_timeout.min(interval);
            let valid = lease.saturating_sub(ops.lease_margin(lease));
            let renewed = tokio::time::timeout(limit, ops.renew(&holds, lease)).await;
            core.metrics
                .renewed(matches!(renewed, Ok(Ok(_))), sent_at.elapsed());
            match renewed {
                Ok(Ok(held)) => {
                    let mut map = core.holds.lock();
                    for ((key, token, _), still) in chunk.iter().zip(held) {
                        let Some(hold) = map.get_mut(key) else {
                            continue;
                        };
                        if hold.token != *token
                            || hold.lost.is_some()
                            || hold.lease != LeaseMode::Watchdog
                        {
                            continue;
                        }
                        if still {
                            hold.deadline = hold.deadline.max(sent_at + valid);
                        } else if !hold.releasing {
                            hold.mark_lost(key, LostReason::Deleted);
                        }
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!(
                        "polylock watchdog: renewing {} failed: {e}; trying again in {:?}",
                        names(chunk),
                        interval.min((lease / 10).max(Duration::from_millis(50)))
                    );
                    ok = false;
                }
                Err(_) => {
                    tracing::warn!(
                        "polylock watchdog: renewing {} got no answer within {limit:?}",
                        names(chunk)
                    );
                    ok = false;
                }
            }
        }
    }
    ok
}
