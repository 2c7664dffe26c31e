package io.polylock;

import static io.polylock.Servers.zkPath;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The core behaviours through Java on the real ZooKeeper. */
class ZkLockIT {
    private PolylockClient client;

    @BeforeEach
    void connect() {
        client = Polylock.connect(Servers.zkUrl());
    }

    @AfterEach
    void close() {
        client.close();
    }

    @Test
    void aJvmThatExitsWithoutCloseLeavesNoNode() throws Exception {
        // The shutdown hook closes open clients: the session ends with the JVM, so its node does
        // not stay on the server for the 10 s session timeout.
        String path = zkPath("exit");
        java.util.List<String> cmd = new java.util.ArrayList<>();
        cmd.add(System.getProperty("java.home") + "/bin/java");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        String lib = System.getProperty("polylock.native.library");
        if (lib != null) {
            cmd.add("-Dpolylock.native.library=" + lib);
        }
        cmd.add(ExitWithoutClose.class.getName());
        cmd.add(Servers.zkUrl());
        cmd.add(path);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("held"), out);
        DistributedLock lock = client.getLock(path);
        long started = System.nanoTime();
        assertTrue(lock.tryLock(2, TimeUnit.SECONDS), "the exited JVM's node was still there");
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(1));
        lock.unlock();
    }

    @Test
    void reentrantPerThreadWithFencingTokens() throws Exception {
        DistributedLock lock = client.getLock(zkPath("reentrant"));
        assertEquals(-2, lock.remainTimeToLive());
        lock.lock();
        assertTrue(lock.tryLock(1, TimeUnit.SECONDS));
        assertEquals(2, lock.getHoldCount());
        long token = lock.getFencingToken();
        assertFalse((boolean) Servers.<Boolean>onOtherThread(lock::tryLock));
        lock.unlock();
        lock.unlock();
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        long next = Servers.onOtherThread(() -> {
            lock.lock();
            try {
                return lock.getFencingToken();
            } finally {
                lock.unlock();
            }
        });
        assertTrue(next > token, next + " > " + token);
    }

    @Test
    void leasesAreUnsupportedAndBadPathsRefused() {
        DistributedLock lock = client.getLock(zkPath("lease"));
        assertThrows(UnsupportedOperationException.class, () -> lock.lock(5, TimeUnit.SECONDS));
        assertFalse(lock.isLocked());
        for (String bad : new String[] {"", "no-slash", "/trailing/", "/a//b", "/a\0b"}) {
            assertThrows(IllegalArgumentException.class, () -> client.getLock(bad), bad);
        }
    }

    @Test
    void anInterruptedWaitLeavesNoNode() throws Exception {
        String path = zkPath("interrupt");
        DistributedLock lock = client.getLock(path);
        lock.lock();
        Servers.Interrupted r = Servers.interruptWhileWaiting(() -> {
            lock.acquire(); // Curator's word, interruptible
            return null;
        }, 200);
        assertInstanceOf(InterruptedException.class, r.outcome);
        assertTrue(r.answeredMs < 3_000, "interrupt answered in " + r.answeredMs + " ms");
        lock.unlock();
        assertFalse(lock.isLocked(), "the interrupted contender's node is gone");
    }

    @Test
    void theMutexIsNotReentrantAndAnyThreadMayReleaseIt() throws Exception {
        DistributedLock mutex = client.getMutex(zkPath("mutex"));
        mutex.lock();
        assertFalse(mutex.tryLock(100, TimeUnit.MILLISECONDS), "not reentrant");
        Servers.onOtherThread(() -> {
            mutex.release();
            return null;
        });
        assertFalse(mutex.isLocked());
        assertThrows(IllegalMonitorStateException.class, mutex::release);
    }
}
