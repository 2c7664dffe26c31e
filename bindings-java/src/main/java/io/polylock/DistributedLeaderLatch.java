package io.polylock;

import java.io.Closeable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A candidate in a leader election with Curator's {@code LeaderLatch} vocabulary: {@link #start()}
 * campaigns in the background, {@link #await()} waits for leadership, {@link #hasLeadership()},
 * {@link #getLeader()}, {@link #getParticipants()}, listeners, {@link #close()}. From {@link
 * PolylockClient#getLeaderLatch(String, String)}.
 *
 * <p>On ZooKeeper it is Curator's LeaderLatch format (EPHEMERAL_SEQUENTIAL nodes {@code
 * _c_<uuid>-latch-<seq>} whose data is the id), so a Curator {@code LeaderLatch} and this one on
 * the same path elect one leader between them. On etcd it is {@code concurrency.Election}'s keys
 * ({@code etcdctl elect}); on Redis a Redisson {@code RLock} on the name plus a leader record.
 *
 * <p>{@link #getTerm()} is a fencing token: greater for every new leader. When leadership is lost
 * (a session expiry, a lease not renewed), the listeners hear {@code notLeader()} and the latch
 * campaigns again, as Curator's does, until it is closed.
 */
public final class DistributedLeaderLatch implements Closeable {
    private final PolylockClient client;
    private final String path;
    private final String id;
    private final List<LeaderLatchListener> listeners = new CopyOnWriteArrayList<>();
    private final Object state = new Object();
    private long handle;
    private Thread runner;
    private boolean started;
    private boolean closed;
    private volatile boolean leading;

    DistributedLeaderLatch(PolylockClient client, String path, String id, long handle) {
        this.client = client;
        this.path = path;
        this.id = id;
        this.handle = handle;
    }

    /** The election's path (its name on Redis and etcd). */
    public String getPath() {
        return path;
    }

    /** The id this latch campaigns with. */
    public String getId() {
        return id;
    }

    /** Start campaigning in the background (once; {@link IllegalStateException} after that). */
    public void start() {
        synchronized (state) {
            if (started || closed) {
                throw new IllegalStateException("a leader latch can be started once");
            }
            started = true;
            runner = new Thread(this::campaignWhileOpen, "polylock-leader-latch-" + path);
            runner.setDaemon(true);
            runner.start();
        }
    }

    public void addListener(LeaderLatchListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    public void removeListener(LeaderLatchListener listener) {
        listeners.remove(listener);
    }

    /** Whether this latch leads now (no round trip). */
    public boolean hasLeadership() {
        return leading && term() > 0;
    }

    /** The term while this latch leads (a fencing token), else -1. */
    public long getTerm() {
        return leading ? term() : -1;
    }

    /** Wait until this latch leads, as long as it takes. */
    public void await() throws InterruptedException {
        synchronized (state) {
            while (!hasLeadership()) {
                checkOpen();
                state.wait();
            }
        }
    }

    /** Wait up to {@code timeout} until this latch leads; true if it does. */
    public boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        synchronized (state) {
            while (!hasLeadership()) {
                checkOpen();
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(state, left);
            }
            return true;
        }
    }

    /** The leader now, or Curator's "none" ({@code id ""}, not leading) when nobody leads. */
    public Participant getLeader() {
        String[] l = Native.electionLeader(live());
        return l == null ? new Participant("", false) : new Participant(l[0], true);
    }

    /** The candidates in order, the leader first (Redis keeps no queue: the leader only). */
    public Collection<Participant> getParticipants() {
        String[] ids = Native.electionCandidates(live());
        List<Participant> out = new ArrayList<>(ids.length);
        for (int i = 0; i < ids.length; i++) {
            out.add(new Participant(ids[i], i == 0));
        }
        return out;
    }

    /** Stop campaigning and leading (the next candidate leads). Idempotent. */
    @Override
    public void close() {
        Thread t;
        synchronized (state) {
            if (closed) {
                return;
            }
            closed = true;
            t = runner;
            state.notifyAll();
        }
        if (t != null) {
            t.interrupt();
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            Native.electionResign(handle);
        } catch (RuntimeException lostOrClosed) {
            // Lost meanwhile, or the client closed: nothing is left to give back.
        }
        boolean was = leading;
        leading = false;
        if (was) {
            tell(false);
        }
        synchronized (state) {
            Native.electionFree(handle);
            handle = 0;
        }
    }

    @Override
    public String toString() {
        return "DistributedLeaderLatch[" + path + " as " + id + "]";
    }

    private long term() {
        synchronized (state) {
            return handle == 0 ? -1 : Native.electionTerm(handle);
        }
    }

    private long live() {
        synchronized (state) {
            checkOpen();
            return handle;
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the leader latch is closed");
        }
    }

    private void tell(boolean isLeader) {
        for (LeaderLatchListener l : listeners) {
            try {
                if (isLeader) {
                    l.isLeader();
                } else {
                    l.notLeader();
                }
            } catch (RuntimeException e) {
                Thread t = Thread.currentThread();
                t.getUncaughtExceptionHandler().uncaughtException(t, e);
            }
        }
    }

    /** The runner: campaign, lead until the leadership ends, and again, until closed. */
    private void campaignWhileOpen() {
        long backoff = 100;
        while (!Thread.currentThread().isInterrupted()) {
            try {
                NativeFuture campaign = new NativeFuture();
                NativeFuture won = Waits.await(campaign, Native.electionCampaignAsync(handle, -1, campaign), true);
                if (!won.succeeded() || won.value() == 0) {
                    continue;
                }
                synchronized (state) {
                    leading = true;
                    state.notifyAll();
                }
                tell(true);
                NativeFuture ended = new NativeFuture();
                NativeFuture lost = Waits.await(ended, Native.electionLostAsync(handle, ended), true);
                leading = false;
                tell(false);
                if (lost.value() == 1) {
                    try {
                        Native.electionResign(handle); // forget the lost leadership, then again
                    } catch (RuntimeException expected) {
                        // LOCK_LOST: said once, as expected
                    }
                }
                backoff = 100;
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (e instanceof PolylockError
                        && ((PolylockError) e).getCode() == PolylockException.Code.INVALID_STATE) {
                    return; // the client closed
                }
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException stop) {
                    return;
                }
                backoff = Math.min(backoff * 2, 5_000);
            }
        }
    }
}
