package io.polylock;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A connection to one lock server (Redisson's {@code RedissonClient}, Curator's
 * {@code CuratorFramework}). Thread-safe; one per application is the usual shape. Closing it
 * releases every lock its threads still hold (and every permit or lease it holds) and ends their
 * waits; it is idempotent.
 *
 * <p>Lost-hold listeners ({@link DistributedLock.Listener}, {@link DistributedSemaphore.Listener},
 * {@link DistributedPermitExpirableSemaphore.Listener}) run on this client's
 * {@code polylock-events} daemon thread, one at a time in the order of the losses. They may call
 * any polylock method, including blocking ones.
 */
public final class PolylockClient implements AutoCloseable {
    /** Bit of {@link #users} set once the client is closed; the bits below count calls in flight. */
    private static final int CLOSED = 1 << 30;

    /** One owner id per Java thread (virtual threads included), shared by every client. */
    private static final ThreadLocal<Long> OWNER = new ThreadLocal<Long>() {
        @Override
        protected Long initialValue() {
            return Native.freshOwner();
        }
    };

    /**
     * Clients not closed yet. A JVM shutdown hook closes them, so that the server forgets their
     * holds and waits when the process ends (a ZooKeeper session would keep its nodes until it
     * timed out, and the next waiter would queue behind them).
     */
    private static final Map<PolylockClient, Boolean> OPEN =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<PolylockClient, Boolean>());

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(PolylockClient::closeAll, "polylock-shutdown"));
    }

    private static void closeAll() {
        List<PolylockClient> open;
        synchronized (OPEN) {
            open = new ArrayList<>(OPEN.keySet());
        }
        for (PolylockClient c : open) {
            try {
                c.close();
            } catch (RuntimeException e) {
                // The server is gone or the client was closed meanwhile: nothing more to do.
            }
        }
    }

    private final long handle;
    private final AtomicInteger users = new AtomicInteger();
    private final AtomicBoolean closing = new AtomicBoolean();
    private final AtomicBoolean freed = new AtomicBoolean();
    private final String id;
    private final boolean queuesWaiters;
    private final Map<String, CopyOnWriteArrayList<LostRoute>> listened = new ConcurrentHashMap<>();
    private final ThreadPoolExecutor events;

    PolylockClient(long handle) {
        this.handle = handle;
        this.id = Native.clientId(handle);
        this.queuesWaiters = Native.queuesWaiters(handle);
        this.events = new ThreadPoolExecutor(0, 1, 5, TimeUnit.SECONDS, new LinkedBlockingQueue<Runnable>(), r -> {
            Thread t = new Thread(r, "polylock-events");
            t.setDaemon(true);
            return t;
        });
        Native.watchLost(handle, this);
        OPEN.put(this, Boolean.TRUE);
    }

    /** ZooKeeper: a wait takes a queue place, so acquires that may wait skip the one-try fast path. */
    boolean queuesWaiters() {
        return queuesWaiters;
    }

    static long currentOwner() {
        return OWNER.get();
    }

    /**
     * A reentrant lock on {@code name} (Redisson {@code getLock}, Curator {@code InterProcessMutex}
     * on a ZooKeeper path). Cheap: calling it for every request is fine.
     *
     * @throws IllegalArgumentException for an empty, oversized or NUL-containing name, or a bad
     *     ZooKeeper path
     */
    public DistributedLock getLock(String name) {
        return newLock(name, Native.KIND_LOCK);
    }

    /**
     * A fair lock on {@code name} (Redisson's {@code getFairLock}): reentrant per thread like
     * {@link #getLock}, and granted in the order the waiters asked for it. On Redis it is
     * Redisson's {@code RFairLock} (the lock hash, the queue {@code redisson_lock_queue:{name}} and
     * the deadlines {@code redisson_lock_timeout:{name}}), so polylock's and Redisson's waiters
     * queue together. A waiter that stops asking (its process died) loses its place after {@link
     * Polylock.Options#fairWaitTimeout} (5 s by default; live waiters keep refreshing theirs),
     * where Redisson lets it keep its place for 5 minutes. On ZooKeeper every lock is granted in
     * order: this is the ordinary lock of {@link #getLock}.
     *
     * @throws IllegalArgumentException for an empty, oversized or NUL-containing name, or a bad
     *     ZooKeeper path
     * @throws UnsupportedOperationException on a RedLock client
     */
    public DistributedLock getFairLock(String name) {
        return newLock(name, Native.KIND_FAIR);
    }

    /**
     * A multi-lock over {@code locks} (Redisson's {@code getMultiLock}): all of them or none. The
     * locks may be of any clients and servers, this one's or others' (Redis and ZooKeeper
     * together); the same as {@link Polylock#multiLock}. See {@link DistributedLock} for what a
     * multi-lock does. Close it when done with it: it holds a native lock.
     *
     * @throws NullPointerException for a null array or a null lock in it
     * @throws IllegalArgumentException for no lock, or the same lock twice
     */
    public DistributedLock getMultiLock(DistributedLock... locks) {
        Objects.requireNonNull(locks, "locks");
        return DistributedLock.multi(java.util.Arrays.asList(locks));
    }

    /**
     * A non-reentrant ZooKeeper mutex in Curator's {@code InterProcessSemaphoreMutex} layout: held by
     * the client, so any thread may release it.
     *
     * @throws UnsupportedOperationException on Redis
     */
    public DistributedLock getMutex(String path) {
        return newLock(path, Native.KIND_MUTEX);
    }

    /**
     * A read-write lock on {@code name}: Redisson's {@code getReadWriteLock} ({@code
     * RReadWriteLock}) on Redis, Curator's {@code InterProcessReadWriteLock} on a ZooKeeper path,
     * in their storage formats, so polylock and those libraries share readers and exclude writers
     * on the same name. Its {@link DistributedReadWriteLock#readLock() readLock()} and {@link
     * DistributedReadWriteLock#writeLock() writeLock()} are {@link DistributedLock}s, reentrant
     * per thread. Cheap, like {@link #getLock}.
     *
     * @throws IllegalArgumentException for an empty, oversized or NUL-containing name, or a bad
     *     ZooKeeper path
     */
    public DistributedReadWriteLock getReadWriteLock(String name) {
        return new DistributedReadWriteLock(newLock(name, Native.KIND_READ), newLock(name, Native.KIND_WRITE));
    }

    /**
     * A counting semaphore on {@code name}: Redisson's {@code RSemaphore} on Redis (permits belong
     * to nobody: anyone may release, a crashed holder's permits are not given back), Curator's
     * {@code InterProcessSemaphoreV2} on a ZooKeeper path with its permits in a {@code
     * SharedCount} at {@code <path>/count} (permits are leases of this client, freed when its
     * session ends). See {@link DistributedSemaphore}. Cheap, like {@link #getLock}.
     *
     * @throws IllegalArgumentException for an empty, oversized or NUL-containing name, or a bad
     *     ZooKeeper path
     */
    public DistributedSemaphore getSemaphore(String name) {
        Objects.requireNonNull(name, "name");
        long h = enter();
        try {
            return new DistributedSemaphore(this, name, Native.semaphoreNew(h, name));
        } finally {
            exit();
        }
    }

    /**
     * A semaphore of expiring permits with ids on {@code name}, in Redisson's {@code
     * RPermitExpirableSemaphore} format (see {@link DistributedPermitExpirableSemaphore}).
     *
     * @throws UnsupportedOperationException on ZooKeeper (use {@link #getSemaphore}, whose leases
     *     end with their session)
     * @throws IllegalArgumentException for an empty, oversized or NUL-containing name
     */
    public DistributedPermitExpirableSemaphore getPermitExpirableSemaphore(String name) {
        Objects.requireNonNull(name, "name");
        long h = enter();
        try {
            return new DistributedPermitExpirableSemaphore(this, name, Native.permitSemaphoreNew(h, name));
        } finally {
            exit();
        }
    }

    /**
     * A candidate in the leader election {@code path} (a ZooKeeper path; a name on Redis and
     * etcd) that campaigns as {@code id} once {@link DistributedLeaderLatch#start() started}:
     * Curator's {@code LeaderLatch} format on ZooKeeper. Close it to stop campaigning.
     *
     * @throws PolylockException UNSUPPORTED on SQL and RedLock clients, INVALID_ARGUMENT for an
     *     empty id
     */
    public DistributedLeaderLatch getLeaderLatch(String path, String id) {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(id, "id");
        long h = enter();
        try {
            return new DistributedLeaderLatch(this, path, id, Native.electionNew(h, path, id));
        } finally {
            exit();
        }
    }

    /**
     * A count-down latch on {@code name}: Redisson's {@code RCountDownLatch} on Redis, a Curator
     * {@code SharedCount} at the path on ZooKeeper (see {@link DistributedCountDownLatch}).
     *
     * @throws IllegalArgumentException for an empty, oversized or NUL-containing name, or a bad
     *     ZooKeeper path
     */
    public DistributedCountDownLatch getCountDownLatch(String name) {
        Objects.requireNonNull(name, "name");
        long h = enter();
        try {
            return new DistributedCountDownLatch(name, Native.latchNew(h, name));
        } finally {
            exit();
        }
    }

    /**
     * The fence of {@code name} on the lock server's own Redis: fenced writes of Redis commands
     * under a lock's fencing token (an {@link UnsupportedException} on ZooKeeper, etcd, SQL and
     * RedLock, whose data is fenced by {@link JdbcFence} in the application's transaction).
     */
    public DistributedFence getFence(String name) {
        Objects.requireNonNull(name, "name");
        long h = enter();
        try {
            return new DistributedFence(name, Native.fenceNew(h, name));
        } finally {
            exit();
        }
    }

    /**
     * Run {@code commands} through the fence of {@code name} under {@code token} (the fencing
     * token of the hold the write is made under): {@link DistributedFence#write} on {@link
     * #getFence}. A {@link StaleTokenException}, with nothing run, when a later holder of {@code
     * name} already wrote.
     */
    public List<Object> fencedWrite(String name, long token, List<? extends List<?>> commands) {
        return getFence(name).write(token, commands);
    }

    private DistributedLock newLock(String name, int kind) {
        Objects.requireNonNull(name, "name");
        long h = enter();
        try {
            return new DistributedLock(this, name, kind, Native.lockNew(h, name, kind));
        } finally {
            exit();
        }
    }

    /** This client's random id (the {@code <uuid>} part of {@code <uuid>:<thread>} on Redis). */
    public String getId() {
        return id;
    }

    /**
     * This client's metrics alone in the Prometheus text format (every client of the process:
     * {@link Polylock#metricsText()}).
     */
    public String metricsText() {
        long h = enter();
        try {
            return Native.clientMetricsText(h);
        } finally {
            exit();
        }
    }

    /** True once {@link #close()} was called. */
    public boolean isClosed() {
        return closing.get();
    }

    /** True while a ZooKeeper connection is down but its session may still be alive. */
    public boolean isSuspended() {
        long h = enter();
        try {
            return Native.isSuspended(h);
        } finally {
            exit();
        }
    }

    /**
     * Release every lock this client's threads hold (their listeners hear of it), end every wait,
     * and disconnect. Idempotent; later calls on the client or its locks throw a
     * {@link PolylockException} with code {@code INVALID_STATE}.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        OPEN.remove(this);
        users.incrementAndGet();
        try {
            Native.close(handle);
        } finally {
            users.addAndGet(CLOSED);
            exit();
        }
    }

    /** Count a call in flight and return the handle it may use. */
    long enter() {
        int u = users.incrementAndGet();
        if ((u & CLOSED) != 0) {
            exit();
            throw new PolylockException(PolylockException.Code.INVALID_STATE, "the polylock client is closed");
        }
        return handle;
    }

    /** End a call; the last one out after close frees the native client. */
    void exit() {
        if (users.decrementAndGet() == CLOSED && freed.compareAndSet(false, true)) {
            Native.free(handle);
        }
    }

    void addListening(LostRoute route) {
        // Atomic per name with removeListening: a route is never added to a list being dropped.
        listened.compute(route.name, (k, l) -> {
            CopyOnWriteArrayList<LostRoute> routes = l != null ? l : new CopyOnWriteArrayList<>();
            routes.addIfAbsent(route);
            return routes;
        });
    }

    /** The name's entry goes with its last route: a client that listens to many names in turn keeps only the live ones. */
    void removeListening(LostRoute route) {
        listened.computeIfPresent(route.name, (k, l) -> {
            l.remove(route);
            return l.isEmpty() ? null : l;
        });
    }

    /** How many names have handles listening for their losses (tests). */
    int listenedNames() {
        return listened.size();
    }

    /**
     * Called by the native library, on one of its runtime threads, for every lost hold, with its
     * kind ({@code Native.KIND_*}: a read and a write hold of one name are two holds, a permit is
     * {@code KIND_PERMIT}), the message of core's LOCK_LOST error and the reason's number ({@link
     * LostReason}). Only handles of that name and kind hear of it.
     */
    void onLost(String name, int kind, long owner, String message, int reason) {
        List<LostRoute> routes = listened.get(name);
        if (routes == null || routes.isEmpty()) {
            return;
        }
        List<LostRoute> targets = new ArrayList<>();
        for (LostRoute r : routes) {
            if (r.kind == kind) {
                targets.add(r);
            }
        }
        if (targets.isEmpty()) {
            return;
        }
        events.execute(() -> {
            for (LostRoute r : targets) {
                r.target.fireLost(owner, new LockLostException(message, LostReason.of(reason)));
            }
        });
    }
}
