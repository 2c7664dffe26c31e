package io.polylock;

import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Owners per virtual thread. Virtual threads need Java 21; the tests are compiled for 17, so they
 * are started through reflection, and bindings-java/run-tests.sh runs this class on the machine's
 * JDK 21+ (the JDK 17 run excludes it).
 */
class VirtualThreadIT {
    private static Thread startVirtual(Runnable r) throws Exception {
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Method start = Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class);
        return (Thread) start.invoke(builder, r);
    }

    private static boolean isVirtual(Thread t) throws Exception {
        return (Boolean) Thread.class.getMethod("isVirtual").invoke(t);
    }

    @Test
    void eachVirtualThreadIsItsOwnOwner() throws Exception {
        try (PolylockClient client = Polylock.connect(Servers.redisUrl())) {
            DistributedLock lock = client.getLock(unique("virtual"));
            AtomicReference<Object> first = new AtomicReference<>();
            Thread t1 = startVirtual(() -> {
                try {
                    lock.lock();
                    lock.lock();
                    first.set(new Object[] {isVirtual(Thread.currentThread()), lock.getHoldCount()});
                    Thread t2 = startVirtual(() -> {
                        try {
                            first.set(new Object[] {first.get(), lock.tryLock(), lock.isHeldByCurrentThread(),
                                caught(lock::unlock)});
                        } catch (Exception e) {
                            first.set(e);
                        }
                    });
                    t2.join();
                    lock.unlock();
                    lock.unlock();
                } catch (Exception e) {
                    first.set(e);
                }
            });
            t1.join(10_000);
            Object[] seen = (Object[]) first.get();
            Object[] mine = (Object[]) seen[0];
            assertEquals(Boolean.TRUE, mine[0], "ran on a virtual thread");
            assertEquals(2, mine[1], "reentrant within one virtual thread");
            assertEquals(Boolean.FALSE, seen[1], "another virtual thread is another owner");
            assertEquals(Boolean.FALSE, seen[2]);
            assertInstanceOf(IllegalMonitorStateException.class, seen[3]);
            assertFalse(lock.isLocked());
        }
    }

    private static Throwable caught(Runnable r) {
        try {
            r.run();
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    @Test
    void twoHundredVirtualThreadsKeepACounterExact() throws Exception {
        try (PolylockClient client = Polylock.connect(Servers.redisUrl())) {
            DistributedLock lock = client.getLock(unique("virtual-counter"));
            Sections sections = new Sections();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                threads.add(startVirtual(sections.worker(lock, 3)));
            }
            for (Thread t : threads) {
                t.join(60_000);
                assertFalse(t.isAlive(), "a virtual thread is stuck");
            }
            assertEquals(0, sections.overlaps.get());
            assertEquals(600, sections.counter.get());
            assertTrue(!lock.isLocked());
        }
    }
}
