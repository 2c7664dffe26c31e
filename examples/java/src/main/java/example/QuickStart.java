package example;

import io.polylock.DistributedLock;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.concurrent.TimeUnit;

/** Lock, work, unlock: {@code java example.QuickStart [redis://127.0.0.1:6379 | zk://127.0.0.1:2181]}. */
public final class QuickStart {
    public static void main(String[] args) throws Exception {
        String url = args.length > 0 ? args[0] : "redis://127.0.0.1:6379";
        String name = url.startsWith("zk://") ? "/quickstart/goods" : "quickstart:goods";
        try (PolylockClient client = Polylock.connect(url)) {
            DistributedLock lock = client.getLock(name);
            lock.lock(); // the watchdog keeps it while this process lives
            try {
                System.out.printf("locked %s on %s, fencing token %d%n", name, url, lock.getFencingToken());
            } finally {
                lock.unlock();
            }
            if (lock.tryLock(1, TimeUnit.SECONDS)) { // wait up to 1 s
                lock.unlock();
            }
            try (DistributedLock.Hold hold = lock.hold()) { // try-with-resources
                System.out.printf("held again, fencing token %d%n", hold.getFencingToken());
            }
            System.out.println("unlocked: " + !lock.isLocked());
        }
    }

    private QuickStart() {}
}
