import io.polylock.DistributedLock;
import io.polylock.DistributedReadWriteLock;
import io.polylock.DistributedSemaphore;
import io.polylock.LockLostException;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.PolylockException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A worker of the randomized checker (faults/chaos.py) on the Java binding: the same operations,
 * drawn from the same mulberry32 generator, as faults/chaos_worker.py (which documents the
 * output). Each actor is a thread (the owner of its holds); the actors share one client per
 * backend and one handle per primitive. A wait is cancelled with {@link Thread#interrupt()}.
 *
 * <p>Usage: ChaosWorker PLAN WORKER_ID SEED SECONDS ACTORS
 */
public final class ChaosWorker {
    static final Object OUT = new Object();
    static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "chaos-interrupter");
        t.setDaemon(true);
        return t;
    });

    /** mulberry32, as the other workers have it. */
    static final class Rng {
        int a;

        Rng(int seed) {
            a = seed;
        }

        long u32() {
            a += 0x6D2B79F5;
            int t = (a ^ (a >>> 15)) * (a | 1);
            t = (t + ((t ^ (t >>> 7)) * (t | 61))) ^ t;
            return (t ^ (t >>> 14)) & 0xFFFFFFFFL;
        }
    }

    static long fnv(long h, long v) {
        for (int k = 0; k < 4; k++) {
            h = ((h ^ ((v >>> (8 * k)) & 0xFF)) * 0x01000193L) & 0xFFFFFFFFL;
        }
        return h;
    }

    static String q(Object o) {
        if (o == null) return "null";
        if (o instanceof Boolean || o instanceof Number) return o.toString();
        String s = o.toString().replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ");
        return "\"" + (s.length() > 200 ? s.substring(0, 200) : s) + "\"";
    }

    /** One JSON line: keys and values alternate. */
    static void emit(Object... kv) {
        StringBuilder b = new StringBuilder("{");
        for (int i = 0; i < kv.length; i += 2) {
            if (i > 0) b.append(',');
            b.append(q(kv[i])).append(':').append(q(kv[i + 1]));
        }
        b.append('}');
        synchronized (OUT) {
            System.out.println(b);
            System.out.flush();
        }
    }

    static String code(Throwable e) {
        if (e instanceof LockLostException) return "LOCK_LOST";
        if (e instanceof PolylockException) return String.valueOf(((PolylockException) e).getCode());
        return e.getClass().getSimpleName();
    }

    static final class Prim {
        String backend, id, kind, name;
        int permits;
    }

    static final class Plan {
        String resource;
        long watchdogMs, sessionMs;
        Map<String, String> urls = new LinkedHashMap<>();
        Map<String, Boolean> lease = new HashMap<>();
        List<Prim> prims = new ArrayList<>();

        Plan(String file) throws Exception {
            for (String line : Files.readAllLines(Path.of(file))) {
                String[] f = line.split("\t");
                switch (f[0]) {
                    case "resource": resource = f[1]; break;
                    case "watchdog_ms": watchdogMs = Long.parseLong(f[1]); break;
                    case "session_ms": sessionMs = Long.parseLong(f[1]); break;
                    case "backend": urls.put(f[1], f[2]); lease.put(f[1], f[3].equals("1")); break;
                    case "prim": {
                        Prim p = new Prim();
                        p.backend = f[1]; p.id = f[2]; p.kind = f[3]; p.name = f[4];
                        p.permits = Integer.parseInt(f[5]);
                        prims.add(p);
                        break;
                    }
                    default: break;
                }
            }
        }
    }

    /** One operation's ten draws, read as every worker reads them. */
    static final class Op {
        String what;
        Prim prim;
        boolean writeMode, reenter;
        long waitMs, leaseMs, cancelMs, idleMs;
        int writes, permits, api;
        long[] sleeps = new long[4];

        Op(long[] d, Plan plan, List<Prim> prims) {
            long sel = d[0] % 100;
            List<Prim> cands = new ArrayList<>();
            if (sel < 40 || sel < 50) {
                what = sel < 40 ? "section" : "try";
                for (Prim p : prims) if (p.kind.equals("lock") || p.kind.equals("fair")) cands.add(p);
            } else if (sel < 62) {
                what = "cancel";
                cands.addAll(prims);
            } else if (sel < 80) {
                what = "rw";
                for (Prim p : prims) if (p.kind.equals("rw")) cands.add(p);
            } else if (sel < 95) {
                what = "sem";
                for (Prim p : prims) if (p.kind.equals("sem")) cands.add(p);
            } else {
                what = "idle";
            }
            prim = cands.isEmpty() ? null : cands.get((int) (d[1] % cands.size()));
            writeMode = (d[1] >>> 16) % 3 == 0;
            waitMs = 100 + d[2] % 2400;
            boolean leaseOk = prim != null && plan.lease.getOrDefault(prim.backend, false);
            leaseMs = leaseOk && d[3] % 100 < 35 ? 150 + (d[3] >>> 8) % 900 : -1;
            writes = (int) (1 + d[4] % 3);
            permits = prim != null && prim.kind.equals("sem") ? (int) (1 + (d[4] >>> 8) % prim.permits) : 1;
            for (int i = 0; i < 4; i++) sleeps[i] = 10 + ((d[5] >>> (8 * i)) & 0xFF) % 70;
            reenter = d[6] % 100 < 30;
            cancelMs = 30 + d[7] % 600;
            api = (int) (d[8] % 2);
            idleMs = 10 + d[9] % 40;
        }
    }

    static final class Actor implements Runnable {
        final Plan plan;
        final Map<String, Object> handles;
        final String name;
        final Rng rng;
        final long deadline;
        final List<Prim> prims = new ArrayList<>();
        BufferedReader in;
        OutputStream out;
        int n;

        Actor(Plan plan, Map<String, Object> handles, String name, int seed, long deadline) {
            this.plan = plan;
            this.handles = handles;
            this.name = name;
            this.rng = new Rng(seed);
            this.deadline = deadline;
            for (Prim p : plan.prims) if (handles.containsKey(p.id)) prims.add(p);
        }

        boolean ask(String op, String prim, String sid, long token, String mode) throws Exception {
            out.write((op + " " + prim + " " + sid + " " + token + " " + mode + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            return "OK".equals(in.readLine());
        }

        void op(String what, Prim p, String result) {
            emit("t", "op", "actor", name, "op", what, "prim", p == null ? null : p.id, "result", result);
        }

        void error(String what, Prim p, String error, String message) {
            emit("t", "error", "actor", name, "op", what, "prim", p == null ? null : p.id, "error", error,
                    "message", message);
        }

        String sid() {
            n++;
            return name + "-" + n;
        }

        @Override
        public void run() {
            String[] hp = plan.resource.split(":");
            long digest = 0x811C9DC5L;
            int ops = 0;
            try (Socket socket = new Socket(hp[0], Integer.parseInt(hp[1]))) {
                socket.setTcpNoDelay(true);
                in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                out = socket.getOutputStream();
                while (System.currentTimeMillis() < deadline) {
                    long[] d = new long[10];
                    for (int i = 0; i < 10; i++) d[i] = rng.u32();
                    if (ops < 64) for (long v : d) digest = fnv(digest, v);
                    ops++;
                    Op o = new Op(d, plan, prims);
                    try {
                        one(o);
                    } catch (PolylockException | IllegalMonitorStateException e) {
                        error(o.what, o.prim, code(e), String.valueOf(e.getMessage()));
                        Thread.sleep(100);
                    }
                }
            } catch (Exception e) {
                error("actor", null, code(e), String.valueOf(e));
                throw new RuntimeException(e);
            }
            emit("t", "done", "actor", name, "ops", ops, "digest", String.format("%08x", digest));
        }

        void one(Op o) throws Exception {
            if (o.prim == null) {
                Thread.sleep(o.idleMs);
                op("idle", null, "ok");
                return;
            }
            Object h = handles.get(o.prim.id);
            if (h instanceof DistributedSemaphore) {
                sem(o, (DistributedSemaphore) h);
                return;
            }
            DistributedLock lock;
            String mode = "x";
            if (h instanceof DistributedReadWriteLock) {
                DistributedReadWriteLock rw = (DistributedReadWriteLock) h;
                lock = o.writeMode ? rw.writeLock() : rw.readLock();
                mode = o.writeMode ? "w" : "r";
            } else {
                lock = (DistributedLock) h;
            }
            lock(o, lock, mode);
        }

        /** Thread.interrupt() this thread after ms, unless disarmed first. */
        final class Interrupter {
            final Thread target = Thread.currentThread();
            boolean armed = true;

            Interrupter(long ms) {
                TIMER.schedule(() -> {
                    synchronized (this) {
                        if (armed) target.interrupt();
                        armed = false;
                    }
                }, ms, TimeUnit.MILLISECONDS);
            }

            /** After this, no interrupt comes; one that came is cleared. */
            void disarm() {
                synchronized (this) {
                    armed = false;
                }
                Thread.interrupted();
            }
        }

        /** Release, trying again when the server did not answer: {outcome, told}. */
        Object[] release(DistributedLock lock) throws InterruptedException {
            String last = "";
            for (int i = 0; i < 20; i++) {
                try {
                    lock.unlock();
                    return new Object[] {"ok", false};
                } catch (LockLostException e) {
                    return new Object[] {"LockLost", true};
                } catch (IllegalMonitorStateException e) {
                    return new Object[] {"NotOwner", false};
                } catch (PolylockException e) {
                    last = code(e);
                    Thread.sleep(100);
                }
            }
            return new Object[] {"error " + last, false};
        }

        void lock(Op o, DistributedLock lock, String mode) throws Exception {
            boolean got;
            if (o.what.equals("cancel")) {
                Interrupter stop = new Interrupter(o.cancelMs);
                try {
                    if (o.api == 0) {
                        lock.lockInterruptibly(o.leaseMs, TimeUnit.MILLISECONDS);
                        got = true;
                    } else {
                        got = lock.tryLock(3_600_000, o.leaseMs, TimeUnit.MILLISECONDS);
                    }
                } catch (InterruptedException e) {
                    stop.disarm();
                    op("cancel", o.prim, "cancelled");
                    if (lock.getHoldCount() != 0) {
                        error("cancel", o.prim, "HeldAfterCancel", "hold count " + lock.getHoldCount() + " after an interrupted wait");
                    }
                    return;
                } finally {
                    // Also when the wait failed otherwise: a late interrupt would end the actor's next sleep.
                    stop.disarm();
                }
            } else if (o.what.equals("try")) {
                got = lock.tryLock(0, o.leaseMs, TimeUnit.MILLISECONDS);
            } else {
                got = lock.tryLock(o.waitMs, o.leaseMs, TimeUnit.MILLISECONDS);
            }
            if (!got) {
                op(o.what, o.prim, o.what.equals("try") ? "busy" : "timeout");
                return;
            }
            op(o.what, o.prim, "acquired");
            long token = lock.getFencingToken();
            String sid = sid();
            boolean told = false;
            section:
            {
                if (!ask("BEGIN", o.prim.id, sid, token, mode)) break section;
                for (int i = 0; i < o.writes; i++) {
                    Thread.sleep(o.sleeps[i]);
                    boolean inner = false;
                    if (i == 0 && o.reenter) {
                        try {
                            inner = lock.tryLock(0, o.leaseMs, TimeUnit.MILLISECONDS);
                            if (!inner) {
                                error("reenter", o.prim, "NotReentered", "a re-entrant try by the holder failed");
                            } else if (lock.getHoldCount() != 2 && !lock.isLost()) {
                                error("reenter", o.prim, "HoldCount", "hold count " + lock.getHoldCount() + " inside a re-entry");
                            }
                        } catch (LockLostException e) {
                            told = true;
                        }
                    }
                    boolean ok = ask("WRITE", o.prim.id, sid, token, mode);
                    if (inner) {
                        Object[] r = release(lock);
                        told |= (Boolean) r[1];
                        op("reenter", o.prim, (String) r[0]);
                    }
                    if (!ok || told) break section;
                }
                Thread.sleep(o.sleeps[3]);
                ask("END", o.prim.id, sid, token, mode);
            }
            told |= lock.isLost();
            Object[] r = release(lock);
            told |= (Boolean) r[1];
            emit("t", "section", "id", sid, "prim", o.prim.id, "told", told, "release", r[0],
                    "lease", o.leaseMs < 0 ? null : o.leaseMs);
            op("release", o.prim, (String) r[0]);
        }

        void sem(Op o, DistributedSemaphore sem) throws Exception {
            DistributedSemaphore.Lease lease;
            if (o.what.equals("cancel")) {
                Interrupter stop = new Interrupter(o.cancelMs);
                try {
                    lease = sem.acquireLease(o.permits, 3_600_000, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    stop.disarm();
                    op("cancel", o.prim, "cancelled");
                    return;
                } finally {
                    stop.disarm();
                }
            } else {
                lease = sem.acquireLease(o.permits, o.waitMs, TimeUnit.MILLISECONDS);
            }
            if (lease == null) {
                op(o.what, o.prim, "timeout");
                return;
            }
            op(o.what, o.prim, "acquired");
            String sid = sid();
            if (ask("BEGIN", o.prim.id, sid, o.permits, "s")) {
                for (int i = 0; i < o.writes; i++) {
                    Thread.sleep(o.sleeps[i]);
                    ask("WRITE", o.prim.id, sid, o.permits, "s");
                }
                Thread.sleep(o.sleeps[3]);
                ask("END", o.prim.id, sid, o.permits, "s");
            }
            boolean told = lease.isLost();
            String result = "ok";
            try {
                lease.close();
            } catch (LockLostException e) {
                result = "LockLost";
                told = true;
            }
            emit("t", "section", "id", sid, "prim", o.prim.id, "told", told, "release", result, "permits", o.permits);
            op("release", o.prim, result);
        }
    }

    public static void main(String[] args) throws Exception {
        Plan plan = new Plan(args[0]);
        String wid = args[1];
        int seed = (int) Long.parseLong(args[2]);
        long deadline = System.currentTimeMillis() + (long) (Double.parseDouble(args[3]) * 1000);
        int actors = Integer.parseInt(args[4]);
        Polylock.Options options = new Polylock.Options()
                .watchdogTimeout(Duration.ofMillis(plan.watchdogMs))
                .sessionTimeout(Duration.ofMillis(plan.sessionMs));
        Map<String, PolylockClient> clients = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : plan.urls.entrySet()) {
            clients.put(e.getKey(), Polylock.connect(e.getValue(), options));
        }
        Map<String, Object> handles = new HashMap<>();
        for (Prim p : plan.prims) {
            PolylockClient c = clients.get(p.backend);
            try {
                switch (p.kind) {
                    case "lock": handles.put(p.id, c.getLock(p.name)); break;
                    case "fair": handles.put(p.id, c.getFairLock(p.name)); break;
                    case "rw": handles.put(p.id, c.getReadWriteLock(p.name)); break;
                    default: {
                        DistributedSemaphore s = c.getSemaphore(p.name);
                        s.trySetPermits(p.permits);
                        handles.put(p.id, s);
                    }
                }
            } catch (UnsupportedOperationException e) {
                emit("t", "op", "actor", "-", "op", "handle", "prim", p.id, "result", "unsupported");
            }
        }
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < actors; i++) {
            int s = seed + (i + 1) * 0x9E3779B9;
            Thread t = new Thread(new Actor(plan, handles, wid + "." + i, s, deadline), wid + "." + i);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        for (PolylockClient c : clients.values()) c.close();
    }
}
