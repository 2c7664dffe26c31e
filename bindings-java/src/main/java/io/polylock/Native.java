package io.polylock;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Properties;

/**
 * The native methods and the one loader of the native library.
 *
 * <p>The library is loaded once per class loader: from {@code -Dpolylock.native.library=<file>}
 * if set, else by {@code System.loadLibrary("polylock_java")} from {@code java.library.path}, else
 * extracted from this JAR's {@code native/<os>-<arch>/} to a temporary file and loaded from
 * there. Tests go through the same path. The loaded library must be of this JAR's version.
 */
final class Native {
    static final String LIBRARY = "polylock_java";

    // The kinds of hold: a lock kind is passed as {@code int kind} to every lock native (one set
    // of natives serves every kind of lock), and every lost hold is reported with its kind. This
    // is the one table on the Java side; the native side's twin is {@code KINDS} in
    // bindings-java/src/convert.rs (NativeTest compares them through kindName). A number never
    // changes meaning; a new kind gets the next number on both sides.
    /** A reentrant lock (Redisson {@code RLock}, Curator {@code InterProcessMutex}). */
    static final int KIND_LOCK = 0;
    /** A non-reentrant ZooKeeper mutex (Curator {@code InterProcessSemaphoreMutex}). */
    static final int KIND_MUTEX = 1;
    /** The read half of a read-write lock (shared). */
    static final int KIND_READ = 2;
    /** The write half of a read-write lock (exclusive). */
    static final int KIND_WRITE = 3;
    /** A permit of a semaphore (never a lock native's kind; only lost permits are reported with it). */
    static final int KIND_PERMIT = 4;
    /** A fair lock (Redisson {@code RFairLock}; on ZooKeeper, where every lock is fair, the ordinary lock). */
    static final int KIND_FAIR = 5;

    /** Not a kind of hold: a multi-lock's {@code kind} in {@link DistributedLock}, outside the kinds' numbers. */
    static final int MULTI = 1000;

    /** The version of this JAR (from Maven), which the native library must match. */
    static final String JAR_VERSION;
    /** Where the library was loaded from (for error messages and tests). */
    static final String LOADED_FROM;

    static {
        JAR_VERSION = jarVersion();
        LOADED_FROM = load();
        String nativeVersion = version();
        if (!nativeVersion.equals(JAR_VERSION)) {
            throw new UnsatisfiedLinkError("polylock native library " + LOADED_FROM + " is version "
                    + nativeVersion + " but the polylock JAR is " + JAR_VERSION);
        }
        // The core's log events to SLF4J, when it is there (never fails the loading).
        Logs.install();
    }

    private Native() {}

    /** Ensures the class (and so the library) is initialised. */
    static void init() {}

    private static String jarVersion() {
        Properties p = new Properties();
        try (InputStream in = Native.class.getResourceAsStream("version.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("cannot read polylock's version.properties: " + e);
        }
        return p.getProperty("version", "unknown");
    }

    /** {@code <os>-<arch>}, as the JAR's {@code native/} folders are named. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.startsWith("linux") ? "linux"
                : os.startsWith("mac") || os.startsWith("darwin") ? "macos"
                : os.startsWith("windows") ? "windows" : os.replaceAll("[^a-z0-9]", "");
        String a = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64"
                : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
        return o + "-" + a;
    }

    private static String load() {
        String explicit = System.getProperty("polylock.native.library");
        if (explicit != null && !explicit.isEmpty()) {
            System.load(explicit);
            return explicit;
        }
        try {
            System.loadLibrary(LIBRARY);
            return "java.library.path";
        } catch (UnsatisfiedLinkError notThere) {
            // fall through to the copy inside the JAR
        }
        String file = System.mapLibraryName(LIBRARY);
        String resource = "/native/" + platform() + "/" + file;
        try (InputStream in = Native.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("polylock has no native library for " + platform()
                        + " (looked for " + resource + " in the JAR and for " + file
                        + " on java.library.path)");
            }
            Path tmp = Files.createTempFile("polylock-", "-" + file);
            try {
                Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                System.load(tmp.toAbsolutePath().toString());
            } finally {
                // Once loaded, the mapping outlives the file (not on Windows: delete on exit there).
                try {
                    Files.delete(tmp);
                } catch (IOException stillMapped) {
                    tmp.toFile().deleteOnExit();
                }
            }
            return "resource:" + resource;
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("cannot extract polylock's native library: " + e);
        }
    }

    static native String version();

    static native String errorName(int code);

    /** Core's word for a kind number ("lock", "read lock", ...), or null for an unknown one. */
    static native String kindName(int kind);

    static native long freshOwner();

    /** The SQL fences' statements: {@code [what, text, what, text, ...]}. */
    static native String[] fenceSql();

    /** Checks a SQL fence's name and token by the core's rules; throws if they are invalid. */
    static native void fenceChecked(String name, long token);

    /**
     * A client handle. Durations in milliseconds; {@code metricNames} the globs of the names with
     * series of their own, {@code service} (or null) and {@code runtime} as operators see them.
     */
    static native long connect(String url, long watchdogMs, long connectMs, long commandMs, long sessionMs,
            long fairWaitMs, String[] metricNames, String service, String runtime);

    /** A client handle like {@link #connect}'s, whose reentrant lock is a RedLock over {@code urls}. */
    static native long connectRedlock(String[] urls, long watchdogMs, long connectMs, long commandMs, long sessionMs,
            long fairWaitMs, String[] metricNames, String service, String runtime);

    // ---- metrics and logs of the whole process ----

    /** Every client's metrics added up, in the form {@link MetricFamily#parse} reads. */
    static native String metricsSnapshot(boolean includeZero);

    /** Every client's metrics in the Prometheus text format. */
    static native String metricsText();

    /** One client's metrics in the Prometheus text format. */
    static native String clientMetricsText(long client);

    /**
     * Hand the core's log events at {@code maxLevel} ({@code Logs.ERROR} .. {@code Logs.DEBUG})
     * and above to {@code target.log(...)} ({@code Logs.class}), from now on; false if it was
     * installed before or the process has a Rust {@code tracing} subscriber of its own.
     */
    static native boolean forwardLogs(Class<?> target, int maxLevel);

    static native void close(long client);

    static native void free(long client);

    static native String clientId(long client);

    static native boolean isSuspended(long client);

    static native boolean queuesWaiters(long client);

    // ---- every kind of lock: made by lockNew (client, name, kind) or multiLockNew ----

    /**
     * The lock handle of the lock {@code name} of {@code kind} on {@code client} (name and kind
     * checked, no round trip); freed with {@link #lockFree} once.
     */
    static native long lockNew(long client, String name, int kind);

    /** The lock handle of a multi-lock over the lock handles {@code locks}; freed with {@link #lockFree} once. */
    static native long multiLockNew(long[] locks);

    static native void lockFree(long lock);

    /**
     * The kind its holds are recorded, and their losses reported, with: its own, but {@code
     * KIND_LOCK} for a fair lock on ZooKeeper (the ordinary lock there); -1 for a multi-lock.
     */
    static native int lockHoldKind(long lock);

    /**
     * One attempt: the fencing token, or -1 when another owner holds the lock; {@code
     * beforeWait}: the fast path of a waiting acquire, whose refusal the wait that follows
     * records (metrics, debug log) instead.
     */
    static native long lockTryAcquire(long lock, long owner, long leaseMs, boolean beforeWait);

    // BEGIN generated from core/api/lock.toml by `python3 scripts/gen-bindings.py`: do not edit
    // A lock of any kind (reentrant, mutex, read or write half, fair, multi-lock, RedLock); every
    // call names its owner. On a handle from lockNew.
    /**
     * The lock's name (a multi-lock's: its members' names joined by `+`, in the order it takes
     * them). Local.
     */
    static native String lockName(long lock);

    /**
     * Whether waiting for the lock takes a place in a queue (ZooKeeper, a fair lock, a multi-lock
     * with such a member), where a one-try fast path before a wait would queue twice. Local.
     */
    static native boolean lockQueuesWaiters(long lock);

    /** Whether any owner of this client holds the lock. Local. */
    static native boolean lockIsHeldLocally(long lock);

    /**
     * Whether `owner` has a hold of the lock, kept or lost and not yet released (a multi-lock: of
     * every member): tells a multi-lock's listeners which of its members' lost holds are its own.
     * Local.
     */
    static native boolean lockHasHold(long lock, long ownerId);

    /**
     * The fencing token of `owner`'s current hold, none if it holds nothing (or its hold was lost).
     * 0 on an SQL client whose URL says `fencing=none`. -1 for none. Local.
     */
    static native long lockFencingToken(long lock, long ownerId);

    /** True if `owner`'s hold was lost and not yet released. Local. */
    static native boolean lockIsLost(long lock, long ownerId);

    /**
     * Acquire (or re-enter) the lock for `owner`, waiting up to the wait; true when held, false
     * when the wait ran out. Without a lease the watchdog renews it while the client lives.
     * Completes {@code future} with the fencing token (TIMEOUT when the wait ran out); returns the
     * cancel handle.
     */
    static native long lockAcquireAsync(long lock, long ownerId, long waitMs, long leaseMs, NativeFuture future);

    /**
     * Release one hold of `owner`: NOT_OWNER if it holds nothing, LOCK_LOST if its hold was lost
     * meanwhile (the hold is then forgotten).
     */
    static native int lockRelease(long lock, long ownerId);

    /**
     * The same, started: completes {@code future} with the holds the owner keeps; returns the
     * cancel handle.
     */
    static native long lockReleaseAsync(long lock, long ownerId, NativeFuture future);

    /** How many times `owner` holds the lock (0 if not at all). */
    static native int lockHoldCount(long lock, long ownerId);

    /** Whether anybody holds the lock (asks the server). */
    static native boolean lockIsLocked(long lock);

    /**
     * Delete the lock whoever holds it and wake its waiters (Redisson's forceUnlock); true if it
     * was held.
     */
    static native boolean lockForceUnlock(long lock);

    /**
     * The same, started: completes {@code future} with 1 (true) or 0 (false); returns the cancel
     * handle.
     */
    static native long lockForceUnlockAsync(long lock, NativeFuture future);

    /**
     * The remaining lease of whoever holds the lock: not held, held with no expiry (ZooKeeper, SQL
     * session locks), or the time left (Redis's PTTL, Redisson's remainTimeToLive). -2 when nobody
     * holds it, -1 when held with no expiry, else the ms left.
     */
    static native long lockRemainingLease(long lock);
    // END generated (lock)

    // ---- every waiting call (see Waits) ----

    static native void cancel(long cancel);

    /** Give back what a call got that completed only after {@link #cancel}. */
    static native void giveBack(long cancel);

    static native void freeCancel(long cancel);

    // ---- counting semaphores ----

    // BEGIN generated from core/api/semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit
    // A counting semaphore (Redisson's RSemaphore on Redis, Curator's InterProcessSemaphoreV2 on
    // ZooKeeper, a lease per permit on etcd). On Redis permits belong to nobody: anyone may release
    // them, and a crashed holder's permits are not given back (the semaphore of expiring permits
    // gives them back). On ZooKeeper and etcd they are leases of this client, freed when its
    // session ends. A native handle: semaphoreNew .. semaphoreFree.
    static native long semaphoreNew(long client, String name);

    static native void semaphoreFree(long semaphore);

    /** How many permits this client holds (its leases on ZooKeeper and etcd; 0 on Redis). Local. */
    static native long semaphoreHeldPermits(long semaphore);

    /** Set the number of permits if nobody set it yet; true if this call set it. */
    static native boolean semaphoreTrySetPermits(long semaphore, long permits);

    /** Add permits, or take free ones away with a negative `delta`. */
    static native void semaphoreAddPermits(long semaphore, long delta);

    /**
     * Take `permits` permits (at least 1) at once, waiting up to the wait; nothing is taken when it
     * runs out. On ZooKeeper and etcd they are leases of this client. Completes {@code future} with
     * 1, or a lease handle when {@code lease} (TIMEOUT when the wait ran out); returns the cancel
     * handle.
     */
    static native long semaphoreAcquireAsync(long semaphore, long permits, long waitMs, boolean lease, NativeFuture future);

    /**
     * One try for `permits` permits (all or none). 0 if not taken, else 1, or a lease handle when
     * {@code lease}.
     */
    static native long semaphoreTryAcquire(long semaphore, long permits, boolean lease);

    /**
     * Give back `permits` permits (at least 1). Redis: anyone may. ZooKeeper and etcd: that many of
     * this client's leases, NOT_OWNER if it holds fewer.
     */
    static native void semaphoreRelease(long semaphore, long permits);

    /** The permits free now. */
    static native long semaphoreAvailablePermits(long semaphore);

    /** Take every permit free now; how many (on ZooKeeper and etcd, leases of this client). */
    static native long semaphoreDrainPermits(long semaphore);

    /** Gives back a lease's own permits and frees the handle (always, however it ends). */
    static native void leaseReturn(long lease);

    /** Whether a lease's permits were lost; local. */
    static native boolean leaseIsLost(long lease);
    // END generated (semaphore)

    // ---- semaphores of expiring permits ----
    // BEGIN generated from core/api/permit_semaphore.toml by `python3 scripts/gen-bindings.py`: do not edit
    // A semaphore of expiring permits (Redisson's RPermitExpirableSemaphore; Redis only). A native
    // handle: permitSemaphoreNew .. permitSemaphoreFree.
    static native long permitSemaphoreNew(long client, String name);

    static native void permitSemaphoreFree(long permitSemaphore);

    /** Set the number of permits if nobody set it yet; true if this call set it. */
    static native boolean permitSemaphoreTrySetPermits(long permitSemaphore, long permits);

    /** Add permits, or take free ones away with a negative `delta`. */
    static native void permitSemaphoreAddPermits(long permitSemaphore, long delta);

    /**
     * Take one permit, waiting up to the wait: its id (32 hexadecimal characters), or none when the
     * wait ran out. Without a lease the watchdog renews it while the client lives. Completes {@code
     * future} with the permit's id as its text (TIMEOUT when the wait ran out); returns the cancel
     * handle.
     */
    static native long permitSemaphoreAcquireAsync(long permitSemaphore, long waitMs, long leaseMs, NativeFuture future);

    /**
     * One try for a permit: its id, or none if none was free. Without a lease the watchdog renews
     * it while the client lives.
     */
    static native String permitSemaphoreTryAcquire(long permitSemaphore, long leaseMs);

    /**
     * Give back the permit `id` (any client may): NOT_OWNER if there is no such permit (never
     * taken, released before, or expired and taken again), LOCK_LOST if its lease had run out (it
     * is counted back all the same), INVALID_ARGUMENT for an id that is not 32 hexadecimal
     * characters.
     */
    static native void permitSemaphoreRelease(long permitSemaphore, String id);

    /** Redisson's tryRelease: give back the permit `id`; true if it was there (expired or not). */
    static native boolean permitSemaphoreTryRelease(long permitSemaphore, String id);

    /** The permits free now (expired ones counted back first). */
    static native long permitSemaphoreAvailablePermits(long permitSemaphore);
    // END generated (permit_semaphore)

    // ---- count-down latches ----
    // BEGIN generated from core/api/latch.toml by `python3 scripts/gen-bindings.py`: do not edit
    // A count-down latch (Redisson's RCountDownLatch on Redis, a Curator SharedCount on ZooKeeper).
    // A native handle: latchNew .. latchFree.
    static native long latchNew(long client, String name);

    static native void latchFree(long latch);

    /** Set the count (at least 1) if the latch is not counting; true if this call set it. */
    static native boolean latchTrySetCount(long latch, long count);

    /**
     * Count down by one; at zero the latch opens and every waiter wakes. Nothing on an open latch.
     */
    static native void latchCountDown(long latch);

    /** The count now (0 when open). */
    static native long latchCount(long latch);

    /**
     * Wait until the count is zero: true when open, false when the wait ran out. Completes {@code
     * future} with 1 (true) or 0 (false); returns the cancel handle.
     */
    static native long latchWaitAsync(long latch, long waitMs, NativeFuture future);

    /** Delete the latch (it opens; its waiters wake); true if it was counting. */
    static native boolean latchDelete(long latch);
    // END generated (latch)

    // BEGIN generated from core/api/election.toml by `python3 scripts/gen-bindings.py`: do not edit
    // A candidate in a leader election (Curator's LeaderLatch on ZooKeeper, etcd's
    // concurrency.Election, a Redisson lock plus a leader record on Redis). A native handle:
    // electionNew .. electionFree.
    static native long electionNew(long client, String name, String identity);

    static native void electionFree(long election);

    /**
     * The term (a fencing token, greater for every new leader) while this candidate leads, else
     * none. -1 for none. Local.
     */
    static native long electionTerm(long election);

    /**
     * Campaign until this candidate leads: its term, or none when the wait ran out (the candidacy
     * is then withdrawn). Leading already: the same term. Completes {@code future} with the term,
     * or 0 when the wait ran out; returns the cancel handle.
     */
    static native long electionCampaignAsync(long election, long waitMs, NativeFuture future);

    /**
     * Stop leading: true if this candidate led; LOCK_LOST if its leadership had been lost
     * meanwhile.
     */
    static native boolean electionResign(long election);

    /** The leader now (any client may ask): its identity and term, or none. */
    static native String[] electionLeader(long election);

    /**
     * The candidates' identities in their order, the leader first (ZooKeeper and etcd queue their
     * candidates; Redis keeps no queue and lists the leader only).
     */
    static native String[] electionCandidates(long election);
    // END generated (election)

    // BEGIN generated from core/api/fence.toml by `python3 scripts/gen-bindings.py`: do not edit
    // A fence: fenced writes of Redis commands under a lock's fencing token (Redis only). A native
    // handle: fenceNew .. fenceFree.
    static native long fenceNew(long client, String name);

    static native void fenceFree(long fence);

    /**
     * Run the commands (each a command's name and its arguments) in one atomic step if `token` is
     * not smaller than the largest token this fence accepted, recording it; their replies, in
     * order. A smaller token fails with STALE_TOKEN and nothing runs; the same token may write any
     * number of times. In a Redis Cluster the commands' keys must carry the name's hash tag
     * ({name}). Each reply is null, a Long, a String (a status, or bulk text that is UTF-8), a
     * byte[] (other bulk bytes) or an Object[] (an array reply).
     */
    static native Object[] fenceWrite(long fence, long token, byte[][][] commands);

    /** The largest token this fence accepted, or none. 0 for none. */
    static native long fenceAccepted(long fence);
    // END generated (fence)

    /**
     * Completes {@code future} when the current leadership ends: 1 when it was lost, 0 when it
     * ended otherwise (resigned) or there is none; returns the cancel handle.
     */
    static native long electionLostAsync(long election, NativeFuture future);

    /** Calls {@code target.onLost(name, kind, owner, message)} for every lost hold. */
    static native void watchLost(long client, PolylockClient target);
}
