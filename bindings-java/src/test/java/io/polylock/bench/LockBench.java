package io.polylock.bench;

import io.polylock.DistributedSemaphore;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;
import org.redisson.Redisson;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * polylock beside Redisson in the same run, on the same Redis: uncontended lock/unlock pairs,
 * 64 threads on distinct keys, 4 threads on one lock, and uncontended semaphore acquire/release
 * pairs (polylock's DistributedSemaphore beside Redisson's RSemaphore, and beside polylock's own
 * lock pair), and polylock's fair-lock pair beside its lock pair. Also prints the Redis PING round trip (the physical floor: a pair is at least two
 * round trips). Run by bindings-java/bench.sh.
 */
public final class LockBench {
    private static final int ROUNDS = 2;

    public static void main(String[] args) throws Exception {
        String url = args.length > 0 ? args[0] : "redis://127.0.0.1:6379";
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 3.0;
        Config config = new Config();
        config.useSingleServer().setAddress(url);
        RedissonClient redisson = Redisson.create(config);
        PolylockClient polylock = Polylock.connect(url);
        try {
            Function<String, Lock> redissonLock = redisson::getLock;
            Function<String, Lock> polylockLock = polylock::getLock;
            // Warm up both (JIT, connections, scripts loaded).
            uncontended(redissonLock, 2000);
            uncontended(polylockLock, 2000);
            pairs(redissonSemaphore(redisson), 2000);
            pairs(polylockSemaphore(polylock), 2000);
            double[] ping = ping(url, 5000);
            System.out.printf("Redis PING round trip (raw socket): p50 %.1f us, p99 %.1f us%n", ping[0], ping[1]);
            for (int r = 1; r <= ROUNDS; r++) {
                System.out.printf("-- round %d%n", r);
                double[] red = uncontended(redissonLock, 5000);
                double[] pol = uncontended(polylockLock, 5000);
                System.out.printf("uncontended pair  redisson p50 %7.1f us %8.0f pairs/s | polylock p50 %7.1f us %8.0f pairs/s | %.2fx (pair p50 = %.2fx PING)%n",
                        red[0], red[1], pol[0], pol[1], pol[1] / red[1], pol[0] / ping[0]);
                double red64 = threads(redissonLock, 64, false, seconds);
                double pol64 = threads(polylockLock, 64, false, seconds);
                System.out.printf("64 threads, distinct keys  redisson %8.0f pairs/s | polylock %8.0f pairs/s | %.2fx%n",
                        red64, pol64, pol64 / red64);
                double red4 = threads(redissonLock, 4, true, seconds);
                double pol4 = threads(polylockLock, 4, true, seconds);
                System.out.printf("4 threads, one lock        redisson %8.0f pairs/s | polylock %8.0f pairs/s | %.2fx%n",
                        red4, pol4, pol4 / red4);
                // Semaphores: acquire()+release() of one permit, uncontended, beside Redisson's
                // RSemaphore and beside polylock's own lock pair, in alternating sub-rounds so
                // that a change in the machine's load hits the three alike; medians of 7.
                double[][] sem = alternating(new Pair[] {
                    redissonSemaphore(redisson), polylockSemaphore(polylock), lockPair(polylockLock)}, 7, 1000);
                System.out.printf("semaphore pair    redisson p50 %7.1f us %8.0f pairs/s | polylock p50 %7.1f us %8.0f pairs/s | %.2fx (target >= 1.5)%n",
                        sem[0][0], sem[0][1], sem[1][0], sem[1][1], sem[1][1] / sem[0][1]);
                System.out.printf("polylock semaphore pair p50 %.1f us beside its lock pair p50 %.1f us: %.2fx (target <= 1.2)%n",
                        sem[1][0], sem[2][0], sem[1][0] / sem[2][0]);
                // The fair lock beside the plain lock, alternating the same way.
                Function<String, Lock> fairLock = polylock::getFairLock;
                double[][] fair = alternating(new Pair[] {lockPair(polylockLock), lockPair(fairLock)}, 7, 1000);
                System.out.printf("polylock fair-lock pair p50 %.1f us beside its lock pair p50 %.1f us: %.2fx (target <= 1.3)%n",
                        fair[1][0], fair[0][0], fair[1][0] / fair[0][0]);
            }
        } finally {
            polylock.close();
            redisson.shutdown();
        }
    }

    /** p50 and p99 of PING round trips in microseconds, over a plain socket. */
    static double[] ping(String url, int n) throws Exception {
        URI u = URI.create(url);
        try (Socket s = new Socket(u.getHost(), u.getPort() < 0 ? 6379 : u.getPort())) {
            s.setTcpNoDelay(true);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            byte[] cmd = "PING\r\n".getBytes("US-ASCII");
            byte[] buf = new byte[7];
            long[] t = new long[n];
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                out.write(cmd);
                out.flush();
                int got = 0;
                while (got < 7) {
                    int r = in.read(buf, got, 7 - got);
                    if (r < 0) {
                        throw new IllegalStateException("connection closed");
                    }
                    got += r;
                }
                t[i] = System.nanoTime() - t0;
            }
            return new double[] {pct(t, 50), pct(t, 99)};
        }
    }

    /** p50 of a lock/unlock pair in microseconds, and pairs per second, on one thread. */
    static double[] uncontended(Function<String, Lock> locks, int n) {
        Lock lock = locks.apply("polylock-bench:java:uncontended:" + System.nanoTime());
        long[] t = new long[n];
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            lock.lock();
            lock.unlock();
            t[i] = System.nanoTime() - t0;
        }
        double secs = (System.nanoTime() - start) / 1e9;
        return new double[] {pct(t, 50), n / secs};
    }

    /** An acquire+release pair of one permit. */
    interface Pair {
        void run() throws Exception;
    }

    static Pair redissonSemaphore(RedissonClient redisson) {
        RSemaphore sem = redisson.getSemaphore("polylock-bench:java:rsemaphore:" + System.nanoTime());
        sem.trySetPermits(1);
        return () -> {
            sem.acquire();
            sem.release();
        };
    }

    static Pair polylockSemaphore(PolylockClient polylock) {
        DistributedSemaphore sem = polylock.getSemaphore("polylock-bench:java:semaphore:" + System.nanoTime());
        sem.trySetPermits(1);
        return () -> {
            sem.acquire();
            sem.release();
        };
    }

    static Pair lockPair(Function<String, Lock> locks) {
        Lock lock = locks.apply("polylock-bench:java:lockpair:" + System.nanoTime());
        return () -> {
            lock.lock();
            lock.unlock();
        };
    }

    /**
     * {@code rounds} sub-rounds of {@code n} pairs of each of {@code pairs} in turn; for each, the
     * median over the sub-rounds of its p50 (us) and of its pairs per second.
     */
    static double[][] alternating(Pair[] pairs, int rounds, int n) throws Exception {
        double[][] p50 = new double[pairs.length][rounds];
        double[][] rate = new double[pairs.length][rounds];
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < pairs.length; k++) {
                double[] m = pairs(pairs[k], n);
                p50[k][r] = m[0];
                rate[k][r] = m[1];
            }
        }
        double[][] out = new double[pairs.length][];
        for (int k = 0; k < pairs.length; k++) {
            out[k] = new double[] {median(p50[k]), median(rate[k])};
        }
        return out;
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    /** p50 of a pair in microseconds, and pairs per second, on one thread (after 200 unmeasured). */
    static double[] pairs(Pair pair, int n) throws Exception {
        for (int i = 0; i < 200; i++) {
            pair.run();
        }
        long[] t = new long[n];
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            pair.run();
            t[i] = System.nanoTime() - t0;
        }
        double secs = (System.nanoTime() - start) / 1e9;
        return new double[] {pct(t, 50), n / secs};
    }

    /** Pairs per second of {@code n} threads for {@code seconds}, on one lock or one each. */
    static double threads(Function<String, Lock> locks, int n, boolean shared, double seconds) throws Exception {
        String base = "polylock-bench:java:threads:" + System.nanoTime();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong pairs = new AtomicLong();
        CountDownLatch ready = new CountDownLatch(n);
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Lock lock = locks.apply(shared ? base : base + ":" + i);
            Thread t = new Thread(() -> {
                ready.countDown();
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                long mine = 0;
                while (!stop.get()) {
                    lock.lock();
                    lock.unlock();
                    mine++;
                }
                pairs.addAndGet(mine);
            });
            t.start();
            ts.add(t);
        }
        ready.await();
        long start = System.nanoTime();
        go.countDown();
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Thread t : ts) {
            t.join(60_000);
        }
        return pairs.get() / ((System.nanoTime() - start) / 1e9);
    }

    static double pct(long[] t, int p) {
        long[] s = t.clone();
        Arrays.sort(s);
        return s[Math.min(s.length - 1, s.length * p / 100)] / 1e3;
    }

    private LockBench() {}

}
