package example;

import io.polylock.DistributedCountDownLatch;
import io.polylock.DistributedLock;
import io.polylock.DistributedSemaphore;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.concurrent.TimeUnit;

/**
 * Lock, work, unlock; a fair lock and a multi-lock; then a semaphore and a count-down latch:
 * {@code java example.QuickStart [redis://127.0.0.1:6379 | zk://127.0.0.1:2181]}.
 */
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

            // First come, first served (Redisson's RFairLock; on ZooKeeper every lock is fair).
            DistributedLock fair = client.getFairLock(name + "-fair");
            try (DistributedLock.Hold hold = fair.hold()) {
                System.out.printf("fair lock held, fencing token %d%n", hold.getFencingToken());
            }

            // All or none, taken in one order whatever order they are given in; the locks may be
            // of different clients and servers (Redis and ZooKeeper together).
            try (DistributedLock both = client.getMultiLock(client.getLock(name + "-a"), client.getLock(name + "-b"));
                    DistributedLock.Hold hold = both.hold()) {
                System.out.printf("multi-lock %s held, fencing token %d%n", both.getName(), hold.getFencingToken());
            }

            // At most 2 downloads at once, across every process (RSemaphore / InterProcessSemaphoreV2).
            DistributedSemaphore downloads = client.getSemaphore(name + "-downloads");
            downloads.trySetPermits(2); // only the first caller sets it
            if (downloads.tryAcquire(1, TimeUnit.SECONDS)) {
                try {
                    System.out.printf("downloading; %d permits left%n", downloads.availablePermits());
                } finally {
                    downloads.release();
                }
            }
            try (DistributedSemaphore.Lease lease = downloads.acquireLease()) { // Curator's words
                System.out.printf("leased %d permit%n", lease.getPermits());
            }

            // Wait until 1 worker has reported (RCountDownLatch / a SharedCount on ZooKeeper).
            DistributedCountDownLatch ready = client.getCountDownLatch(name + "-ready");
            ready.trySetCount(1);
            ready.countDown();
            System.out.println("latch open: " + ready.await(1, TimeUnit.SECONDS));
        }
    }

    private QuickStart() {}
}
