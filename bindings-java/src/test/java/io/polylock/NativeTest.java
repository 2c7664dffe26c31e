package io.polylock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** What needs no lock server: loading, versions, the error table, bad arguments. */
class NativeTest {
    @Test
    void loadsFromTheBundledResourceAndVersionsMatchCargo() throws Exception {
        String cargo = new String(Files.readAllBytes(Paths.get("..", "Cargo.toml")), "UTF-8");
        Matcher m = Pattern.compile("(?m)^version = \"([^\"]+)\"").matcher(cargo);
        assertTrue(m.find(), "workspace version in Cargo.toml");
        assertEquals(m.group(1), Polylock.version());
        assertEquals(m.group(1), Native.version());
        assertEquals("resource:/native/" + Native.platform() + "/" + System.mapLibraryName("polylock_java"),
                Native.LOADED_FROM);
    }

    @Test
    void codeEnumIsCoreErrorTable() {
        for (PolylockException.Code c : PolylockException.Code.values()) {
            assertEquals(c.name(), Native.errorName(c.number()), "code " + c.number());
        }
        assertNull(Native.errorName(PolylockException.Code.values().length + 1), "no codes beyond the enum");
        assertNull(Native.errorName(0));
    }

    @Test
    void everyCodeBecomesItsJavaException() {
        RuntimeException up = PolylockException.fromNative(PolylockException.Code.UPGRADE_NOT_SUPPORTED.number(), "m");
        assertInstanceOf(UpgradeNotSupportedException.class, up);
        assertEquals(PolylockException.Code.UPGRADE_NOT_SUPPORTED, ((PolylockException) up).getCode());
        assertEquals(14, PolylockException.Code.UPGRADE_NOT_SUPPORTED.number());
        assertInstanceOf(LockLostException.class, PolylockException.fromNative(5, "m"));
        assertInstanceOf(IllegalMonitorStateException.class, PolylockException.fromNative(4, "m"));
        assertEquals(PolylockException.Code.INTERNAL, PolylockException.Code.of(99));
    }

    @Test
    void kindNumbersAreCoreKinds() {
        // Native.KIND_* and the KINDS table of bindings-java/src/convert.rs are one numbering.
        assertEquals("lock", Native.kindName(Native.KIND_LOCK));
        assertEquals("mutex", Native.kindName(Native.KIND_MUTEX));
        assertEquals("read lock", Native.kindName(Native.KIND_READ));
        assertEquals("write lock", Native.kindName(Native.KIND_WRITE));
        assertEquals("permit", Native.kindName(Native.KIND_PERMIT), "a semaphore's permit, as lost holds report it");
        assertEquals("fair lock", Native.kindName(Native.KIND_FAIR));
        assertNull(Native.kindName(Native.KIND_FAIR + 1), "no kinds beyond the constants");
        assertNull(Native.kindName(-1));
        assertNull(Native.kindName(Native.MULTI), "the multi-lock marker is no kind");
    }

    @Test
    void badUrlsAndOptionsAreIllegalArguments() {
        for (String url : new String[] {"", "http://127.0.0.1:6379", "redis://", "zk://", "redis://127.0.0.1:notaport"}) {
            assertThrows(IllegalArgumentException.class, () -> Polylock.connect(url), url);
        }
        assertThrows(NullPointerException.class, () -> Polylock.connect(null));
        assertThrows(IllegalArgumentException.class, () -> new Polylock.Options().watchdogTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> new Polylock.Options().commandTimeout(Duration.ofMillis(-5)));
        assertThrows(IllegalArgumentException.class,
                () -> Polylock.connect("redis://127.0.0.1:6379", new Polylock.Options().watchdogTimeout(Duration.ofMillis(5))));
        assertThrows(IllegalArgumentException.class, () -> new Polylock.Options().fairWaitTimeout(Duration.ZERO));
        assertThrows(NullPointerException.class, () -> new Polylock.Options().fairWaitTimeout(null));
        // Core's lower bound (30 ms), checked before any connection is tried.
        IllegalArgumentException shortWait = assertThrows(IllegalArgumentException.class,
                () -> Polylock.connect("redis://127.0.0.1:6379", new Polylock.Options().fairWaitTimeout(Duration.ofMillis(5))));
        assertTrue(shortWait.getMessage().contains("fair wait timeout"), shortWait.getMessage());
    }

    @Test
    void aServerThatIsDownIsAConnectionError() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Polylock.Options quick = new Polylock.Options().connectTimeout(Duration.ofMillis(500));
        PolylockException e = assertThrows(PolylockConnectionException.class,
                () -> Polylock.connect("redis://127.0.0.1:" + port, quick));
        assertEquals(PolylockException.Code.CONNECTION, e.getCode());
    }
}
