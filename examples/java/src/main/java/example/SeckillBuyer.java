package example;

import io.polylock.DistributedLock;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import redis.clients.jedis.Jedis;

/**
 * A seckill (flash sale) buyer in Java, the buyer of seed 002 on polylock instead of Redisson or
 * Curator: the stock lives in Redis (Jedis), one lock keeps buyers from selling one item twice.
 * On Redis it is written the Redisson way ({@code lock()} / {@code unlock()}), on ZooKeeper the
 * Curator way ({@code acquire()} / {@code release()}). Prints one JSON line: purchases and
 * lock-wait p50/p99 in ms.
 *
 * <pre>java example.SeckillBuyer --url redis://127.0.0.1:6379 [--lock-url zk://...] --name goods
 *     [--sections FILE (each critical section: "start_us end_us token")] [--start-at EPOCH_MS]</pre>
 */
public final class SeckillBuyer {
    public static void main(String[] args) throws Exception {
        String url = "redis://127.0.0.1:6379";
        String lockUrl = null;
        String name = "goods";
        int max = Integer.MAX_VALUE;
        double delayMs = 1.0;
        String sectionsPath = null;
        long startAt = -1;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--url": url = args[i + 1]; break;
                case "--lock-url": lockUrl = args[i + 1]; break;
                case "--name": name = args[i + 1]; break;
                case "--max": max = Integer.parseInt(args[i + 1]); break;
                case "--delay-ms": delayMs = Double.parseDouble(args[i + 1]); break;
                case "--sections": sectionsPath = args[i + 1]; break;
                case "--start-at": startAt = Long.parseLong(args[i + 1]); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (lockUrl == null) {
            lockUrl = url;
        }
        boolean zk = lockUrl.startsWith("zk://");
        String lockName = zk ? "/seckill/" + name : "seckill:" + name;
        String stockKey = "seckill:" + name + ":stock";
        String soldKey = "seckill:" + name + ":sold";
        String tokenKey = "seckill:" + name + ":last-token";
        List<Double> waits = new ArrayList<>();
        StringBuilder sections = new StringBuilder();
        int bought = 0;
        // Each sale is a fenced write on the Redis of the stock (the lock may be elsewhere): a buyer
        // whose lease ended while it was paused cannot sell after a later buyer did.
        try (PolylockClient client = Polylock.connect(lockUrl);
                PolylockClient fence = lockUrl.equals(url) ? null : Polylock.connect(url);
                Jedis redis = new Jedis(java.net.URI.create(url))) {
            PolylockClient fenced = fence == null ? client : fence;
            DistributedLock lock = client.getLock(lockName);
            if (startAt > 0) {
                Thread.sleep(Math.max(0, startAt - System.currentTimeMillis()));
            }
            while (bought < max) {
                long asked = System.nanoTime();
                if (zk) {
                    lock.acquire(); // Curator: InterProcessMutex.acquire()
                } else {
                    lock.lock(); // Redisson: RLock.lock(), kept by the watchdog
                }
                boolean soldOne = false;
                long start = sectionMicros();
                long token = lock.getFencingToken();
                try {
                    waits.add((System.nanoTime() - asked) / 1e6);
                    int stock = Integer.parseInt(orZero(redis.get(stockKey)));
                    if (stock <= 0) {
                        break;
                    }
                    if (token <= Long.parseLong(orZero(redis.get(tokenKey)))) {
                        System.err.println("fencing token " + token + " is not above the last one");
                        System.exit(1);
                    }
                    Thread.sleep((long) delayMs, (int) ((delayMs % 1) * 1e6));
                    int sold = Integer.parseInt(orZero(redis.get(soldKey)));
                    fenced.fencedWrite(lockName, token, List.of(List.of("SET", stockKey, stock - 1),
                            List.of("SET", soldKey, sold + 1), List.of("SET", tokenKey, token)));
                    soldOne = true;
                } finally {
                    sections.append(start).append(' ').append(sectionMicros()).append(' ').append(token).append('\n');
                    if (zk) {
                        lock.release();
                    } else {
                        lock.unlock();
                    }
                }
                if (soldOne) {
                    bought++;
                }
            }
        }
        if (sectionsPath != null) {
            java.nio.file.Files.write(java.nio.file.Paths.get(sectionsPath),
                    sections.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        Collections.sort(waits);
        System.out.printf("{\"purchases\": %d, \"wait_p50_ms\": %.3f, \"wait_p99_ms\": %.3f}%n",
                bought, pct(waits, 0.5), pct(waits, 0.99));
    }

    /**
     * Microseconds on the machine's monotonic clock: System.nanoTime() is CLOCK_MONOTONIC on
     * Linux, which every buyer of the demo stamps its sections with, so they compare across
     * processes.
     */
    private static long sectionMicros() {
        return System.nanoTime() / 1_000;
    }

    private static String orZero(String v) {
        return v == null ? "0" : v;
    }

    private static double pct(List<Double> sorted, double q) {
        return sorted.isEmpty() ? 0.0 : sorted.get((int) ((sorted.size() - 1) * q));
    }

    private SeckillBuyer() {}
}
