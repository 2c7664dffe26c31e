//! One acquire or release at a time per hold key (name, kind, owner) in a client.
//!
//! An acquire reads the owner's hold count, sends it with its request, and records the count the
//! server answers. Two first acquires of one owner at once would both send "0": on Redis the
//! second finds the owner's field and starts its ownership over (count 1, not 2), so both callers
//! believe they hold and one release frees the lock while the other section still runs; on
//! ZooKeeper the second queues a node behind the owner's own first node and waits on itself. With
//! the gate the second waits for the first's outcome, then re-enters (count 2 on every backend).
//! A release passes through the same gate, so that it never races an acquire of its own owner.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use foldhash::HashMap;
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::HoldKey;
use crate::model::options::Wait;

struct Gate {
    turn: Arc<AsyncMutex<()>>,
    /// The operation inside may wait for another owner (an acquire with a wait), as opposed to
    /// one that answers after a round trip (a try, a release).
    patient: AtomicBool,
}

/// The gates of one client, one per key that an operation is passing or waiting at.
#[derive(Default)]
pub(crate) struct Gates {
    map: Mutex<HashMap<HoldKey, Arc<Gate>>>,
}

/// Passage through a key's gate: the next operation of that key waits until it is dropped.
pub(crate) struct Passage<'a> {
    gates: &'a Gates,
    key: HoldKey,
    gate: Arc<Gate>,
    turn: Option<OwnedMutexGuard<()>>,
}

/// What happened at the gate.
pub(crate) enum Entry<'a> {
    /// Through; the operation's own wait (what is left of it) follows.
    Through(Passage<'a>, Wait),
    /// An acquire of the same owner that may wait for others is inside, and this one may not
    /// wait (or its wait ran out at the gate): not acquired.
    Busy,
}

impl Gates {
    fn gate(&self, key: &HoldKey) -> Arc<Gate> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.clone())
            .or_insert_with(|| {
                Arc::new(Gate {
                    turn: Arc::new(AsyncMutex::new(())),
                    patient: AtomicBool::new(false),
                })
            })
            .clone()
    }

    /// Whether an operation of `key` is passing its gate or waiting at it.
    pub(crate) fn is_busy(&self, key: &HoldKey) -> bool {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.contains_key(key)
    }

    /// Pass the gate of `key` for an operation that may wait as `wait` says (a release: `Forever`).
    /// A wait spent queued at the gate counts against the operation's own wait, which is returned
    /// shortened. A no-wait operation waits at the gate only behind other no-wait operations (one
    /// round trip), never behind an acquire that waits for another owner.
    pub(crate) async fn enter(&self, key: &HoldKey, wait: Wait) -> Entry<'_> {
        let gate = self.gate(key);
        let mut passage = Passage {
            gates: self,
            key: key.clone(),
            gate: gate.clone(),
            turn: None,
        };
        let (turn, wait) = match gate.turn.clone().try_lock_owned() {
            Ok(turn) => (turn, wait),
            Err(_) => match wait {
                Wait::Never if gate.patient.load(Ordering::Acquire) => return Entry::Busy,
                Wait::Never | Wait::Forever => (gate.turn.clone().lock_owned().await, wait),
                Wait::For(d) => {
                    let until = Instant::now() + d;
                    let queued = gate.turn.clone().lock_owned();
                    let Ok(turn) = tokio::time::timeout_at(until.into(), queued).await else {
                        return Entry::Busy;
                    };
                    match until.saturating_duration_since(Instant::now()) {
                        left if left.is_zero() => (turn, Wait::Never),
                        left => (turn, Wait::For(left)),
                    }
                }
            },
        };
        gate.patient
            .store(!matches!(wait, Wait::Never), Ordering::Release);
        passage.turn = Some(turn);
        Entry::Through(passage, wait)
    }
}

impl Drop for Passage<'_> {
    fn drop(&mut self) {
        self.gate.patient.store(false, Ordering::Release);
        drop(self.turn.take());
        // Forget the gate when nobody else holds or waits for it (they clone it under this lock).
        let mut map = self.gates.map.lock().unwrap_or_else(|e| e.into_inner());
        if Arc::strong_count(&self.gate) == 2 {
            if let Some(g) = map.get(&self.key) {
                if Arc::ptr_eq(g, &self.gate) {
                    map.remove(&self.key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kind::{HoldKind, LockKind};
    use std::time::Duration;

    fn key() -> HoldKey {
        (Arc::from("g"), HoldKind::Lock(LockKind::Reentrant), 7)
    }

    #[tokio::test]
    async fn one_at_a_time_and_forgotten_after() {
        let gates = Gates::default();
        let Entry::Through(first, _) = gates.enter(&key(), Wait::Forever).await else {
            panic!("an open gate");
        };
        // A try does not wait behind an acquire that may wait for others.
        assert!(matches!(
            gates.enter(&key(), Wait::Never).await,
            Entry::Busy
        ));
        // A bounded wait spends its time at the gate and is told so.
        let t = Instant::now();
        assert!(matches!(
            gates
                .enter(&key(), Wait::For(Duration::from_millis(50)))
                .await,
            Entry::Busy
        ));
        assert!(t.elapsed() >= Duration::from_millis(50));
        drop(first);
        assert!(
            gates.map.lock().unwrap().is_empty(),
            "the gate is forgotten"
        );
        let Entry::Through(_p, wait) = gates.enter(&key(), Wait::For(Duration::from_secs(1))).await
        else {
            panic!("open again");
        };
        assert_eq!(wait, Wait::For(Duration::from_secs(1)));
    }

    #[tokio::test]
    async fn a_try_waits_behind_a_try() {
        let gates = Arc::new(Gates::default());
        let Entry::Through(first, _) = gates.enter(&key(), Wait::Never).await else {
            panic!("an open gate");
        };
        let g = gates.clone();
        let second = tokio::spawn(async move {
            matches!(g.enter(&key(), Wait::Never).await, Entry::Through(..))
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !second.is_finished(),
            "the second try waits for the first's outcome"
        );
        drop(first);
        assert!(second.await.unwrap());
    }
}
