package io.polylock;

import static io.polylock.Servers.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;
import org.slf4j.event.Level;

/**
 * The core's log events through SLF4J (the tests' binding, {@link CapturedLogs}, has polylock's
 * loggers at DEBUG), against the real Redis.
 */
class LogsIT {
    private PolylockClient client;

    @BeforeEach
    void connect() {
        client = Polylock.connect(Servers.redisUrl());
    }

    @AfterEach
    void close() {
        CapturedLogs.throwNext = null;
        client.close();
    }

    @Test
    void theForwardingIsInstalledAtTheLevelSlf4jHasOn() {
        Native.init();
        assertTrue(Logs.installed, "installed when the library loaded");
        assertEquals(Logs.DEBUG, Logs.level, "the test binding has io.polylock at DEBUG");
    }

    @Test
    void aLostLockIsAWarningNamingTheLock() throws Exception {
        PolylockClient quick = Polylock.connect(Servers.redisUrl(),
                new Polylock.Options().watchdogTimeout(Duration.ofMillis(600)));
        try {
            DistributedLock lock = quick.getLock(unique("logs-lost"));
            CountDownLatch heard = new CountDownLatch(1);
            lock.addListener((l, e) -> heard.countDown());
            lock.lock();
            assertTrue(client.getLock(lock.getName()).forceUnlock());
            assertTrue(heard.await(5, TimeUnit.SECONDS));
            CapturedLogs.Event e = CapturedLogs.await(
                    x -> x.level == Level.WARN && lock.getName().equals(x.mdc.get("polylock.lock")), 5_000);
            assertNotNull(e, "no WARN with the lock in the MDC: " + CapturedLogs.events());
            assertTrue(e.logger.startsWith("io.polylock"), e.toString());
            assertTrue(e.message.contains("lost"), e.toString());
            assertTrue(e.message.contains("'" + lock.getName() + "'"), "the message names the lock: " + e);
            assertEquals("lock", e.mdc.get("polylock.kind"), e.toString());
            assertTrue(e.daemon, "logged from the watchdog's thread, a daemon: " + e);
            assertTrue(e.thread.startsWith("polylock-"), "the runtime thread's name in Java too: " + e);
        } finally {
            quick.close();
        }
    }

    @Test
    void everyAcquireAndReleaseIsADebugEventWithItsOutcome() throws Exception {
        DistributedLock lock = client.getLock(unique("logs-debug"));
        lock.lock();
        lock.unlock();
        assertTrue(!Servers.<Boolean>onOtherThread(() -> {
            lock.lock();
            try {
                return Servers.<Boolean>onOtherThread(lock::tryLock);
            } finally {
                lock.unlock();
            }
        }));
        CapturedLogs.Event acquired = CapturedLogs.await(x -> x.logger.equals("io.polylock.acquire")
                && lock.getName().equals(x.mdc.get("polylock.lock")) && "acquired".equals(x.mdc.get("polylock.outcome")), 5_000);
        assertNotNull(acquired, "no acquire event: " + CapturedLogs.events());
        assertEquals(Level.DEBUG, acquired.level);
        assertTrue(acquired.message.contains(lock.getName()), acquired.toString());
        assertNotNull(acquired.mdc.get("polylock.wait_ms"), acquired.toString());
        assertNotNull(CapturedLogs.await(x -> x.logger.equals("io.polylock.acquire")
                && lock.getName().equals(x.mdc.get("polylock.lock"))
                && "not_acquired".equals(x.mdc.get("polylock.outcome")), 5_000), "the refused try");
        assertNotNull(CapturedLogs.await(x -> x.logger.equals("io.polylock.release")
                && lock.getName().equals(x.mdc.get("polylock.lock")), 5_000), "no release event: " + CapturedLogs.events());
    }

    @Test
    void theThreadsMdcIsPutBack() throws Exception {
        DistributedLock lock = client.getLock(unique("logs-mdc"));
        MDC.put("polylock.lock", "the application's");
        MDC.put("request", "r-1");
        try {
            // A try runs on this thread inside the native call: its event is logged here.
            assertTrue(lock.tryLock());
            lock.unlock();
            String thread = Thread.currentThread().getName();
            CapturedLogs.Event e = CapturedLogs.await(x -> x.logger.equals("io.polylock.acquire")
                    && lock.getName().equals(x.mdc.get("polylock.lock")), 5_000);
            assertNotNull(e, "no acquire event: " + CapturedLogs.events());
            if (e.thread.equals(thread)) {
                assertEquals("r-1", e.mdc.get("request"), "the application's MDC is there too: " + e);
            }
            assertEquals("the application's", MDC.get("polylock.lock"));
            assertEquals("r-1", MDC.get("request"));
        } finally {
            MDC.clear();
        }
    }

    @Test
    void aLoggerThatThrowsBreaksNothing() throws Exception {
        DistributedLock lock = client.getLock(unique("logs-throws"));
        CapturedLogs.throwNext = new IllegalStateException("an appender failed");
        lock.lock();
        lock.unlock();
        assertEquals(null, CapturedLogs.throwNext, "the logger was called and threw");
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            lock.lock();
            tokens.add(lock.getFencingToken());
            lock.unlock();
        }
        assertTrue(tokens.get(2) > tokens.get(0), tokens.toString());
        assertNotNull(CapturedLogs.await(x -> x.logger.equals("io.polylock.release")
                && lock.getName().equals(x.mdc.get("polylock.lock")), 5_000), "later events still arrive");
    }

    @Test
    void aJvmThatExitsWhileLoggingEndsCleanly() throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("java.home") + "/bin/java");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        String lib = System.getProperty("polylock.native.library");
        if (lib != null) {
            cmd.add("-Dpolylock.native.library=" + lib);
        }
        cmd.add(LogWhileExiting.class.getName());
        cmd.add(Servers.redisUrl());
        cmd.add(unique("logs-exit"));
        for (int run = 0; run < 3; run++) {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), out);
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("logged (\\d+)").matcher(out);
            assertTrue(m.find(), out);
            assertTrue(Integer.parseInt(m.group(1)) > 0, "events were being logged as it exited: " + out);
            assertTrue(!out.contains("SIGSEGV") && !out.contains("fatal error"), out);
        }
    }
}
