import io.polylock.DistributedCountDownLatch;
import io.polylock.DistributedLeaderLatch;
import io.polylock.DistributedLock;
import io.polylock.DistributedPermitExpirableSemaphore;
import io.polylock.DistributedSemaphore;
import io.polylock.LockLostException;
import io.polylock.LockTimeoutException;
import io.polylock.Participant;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.PolylockError;
import io.polylock.PolylockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The Java runner of polylock's conformance suite (conformance/README.md): runs every scenario of
 * conformance/scenarios/*.json against the servers of scripts/servers.sh with the polylock JAR,
 * and prints {@code conformance java: N passed, N failed, N not applicable}.
 *
 * <pre>java -cp polylock.jar:. Runner [--scenarios DIR] [--only TEXT] [--jobs N] [--vocabulary] [-v]</pre>
 *
 * Each actor is a thread of its own: a Java owner is a thread.
 */
public final class Runner {
    static final String RUNTIME = "java";

    static final Map<String, String> VOCABULARY = new LinkedHashMap<>();

    static {
        Map<String, String> v = VOCABULARY;
        v.put("connect", "`Polylock.connect(url)` (`Polylock.connectRedlock(urls...)`)");
        v.put("owner", "the calling thread (virtual threads too)");
        v.put("acquire", "`lock.tryLock(waitTime, unit)`, `lock.tryLock(waitTime, leaseTime, unit)` → `true`");
        v.put("wait_forever", "`lock.lock()`, `lock.lockInterruptibly()`");
        v.put("wait_none", "`lock.tryLock()`");
        v.put("not_acquired", "`false` (`tryLock`, `tryAcquire`; `null` where the acquire returns a permit id or a token: `tryAcquire` of expiring permits, `tryLockAndGetToken`, as Redisson's)");
        v.put("lease_watchdog", "no lease time (`leaseTime` -1)");
        v.put("lease_fixed", "`lock.lock(leaseTime, unit)`, `lock.tryLock(waitTime, leaseTime, unit)`");
        v.put("release", "`lock.unlock()` (`unlockAsync()`), `hold.close()`");
        v.put("reenter", "`lock.lock()` again in the same thread");
        v.put("hold_count", "`lock.getHoldCount()`, `lock.isHeldByCurrentThread()`");
        v.put("is_locked", "`lock.isLocked()`");
        v.put("fencing_token", "`lock.getFencingToken()`, `lock.lockAndGetToken()` (RFencedLock's name)");
        v.put("remaining_lease", "`lock.remainTimeToLive()` → -2 / -1 / ms (Redisson's convention)");
        v.put("extend", "none (Redisson's RLock has none: a new `tryLock(wait, lease)` of the holder)");
        v.put("force_unlock", "`lock.forceUnlock()` (`forceUnlockAsync()`) → was it held");
        v.put("lost_listener", "`lock.addListener((lock, cause) -> ...)`, `cause`: a `LockLostException`");
        v.put("lost_reasons", "`LostReason.EXPIRED`, `DELETED`, `RENEWAL_FAILED`, `SESSION_EXPIRED`, `CLIENT_CLOSED` (`cause.getReason()`)");
        v.put("is_lost", "`lock.isLost()`");
        v.put("suspended", "`client.isSuspended()`");
        v.put("section", "`try (DistributedLock.Hold h = lock.hold(waitTime, leaseTime, unit)) { ... }`; Spring's `@DistributedLocked`");
        v.put("timeout_error", "`LockTimeoutException` (a `PolylockException`; Spring's `LockNotAcquiredException` extends it)");
        v.put("base_error", "`PolylockException` (`getCode()`, `getNumber()`); every error implements `PolylockError`");
        v.put("not_owner_error", "`NotOwnerException`, an `IllegalMonitorStateException` (the `Lock#unlock` contract) implementing `PolylockError`");
        v.put("read_write", "`client.getReadWriteLock(name).readLock()` / `.writeLock()`");
        v.put("semaphore_acquire", "`sem.tryAcquire(permits, waitTime, unit)` → `true` / `false`");
        v.put("permit_acquire", "`pes.tryAcquire(waitTime, leaseTime, unit)` → the id / `null` (Redisson's)");
        v.put("latch_wait", "`latch.await(time, unit)` → `true` open / `false`");
        v.put("multi", "`client.getMultiLock(a, b)`, `Polylock.multiLock(list)`");
        v.put("election", "`client.getLeaderLatch(path, id)` (Curator's `LeaderLatch`): `start()`, `await(time, unit)` → `true` (`getTerm()`), `close()`, `getLeader()`, `getParticipants()`");
        v.put("close", "`client.close()` (try-with-resources)");
    }

    static final Set<String> REASONS =
            new TreeSet<>(Arrays.asList("EXPIRED", "DELETED", "RENEWAL_FAILED", "SESSION_EXPIRED", "CLIENT_CLOSED"));

    /** The runner could not do what a step says (not an outcome of polylock). */
    static final class RunnerException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RunnerException(String message) {
            super(message);
        }
    }

    // ---- a small JSON reader (the JDK has none) ----------------------------------------------------

    static final class Json {
        final String s;
        int i;

        Json(String s) {
            this.s = s;
        }

        static Object parse(String text) {
            Json j = new Json(text);
            Object v = j.value();
            j.ws();
            if (j.i != text.length()) {
                throw new IllegalArgumentException("trailing JSON at " + j.i);
            }
            return v;
        }

        void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        Object value() {
            ws();
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                ws();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    ws();
                    String k = string();
                    ws();
                    i++; // :
                    m.put(k, value());
                    ws();
                    if (s.charAt(i++) == '}') {
                        return m;
                    }
                }
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i++) == ']') {
                        return l;
                    }
                }
            }
            if (c == '"') {
                return string();
            }
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String num = s.substring(start, i);
            return num.contains(".") || num.contains("e") || num.contains("E") ? (Object) Double.parseDouble(num) : (Object) Long.parseLong(num);
        }

        String string() {
            StringBuilder b = new StringBuilder();
            i++; // "
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n': b.append('\n'); break;
                        case 't': b.append('\t'); break;
                        case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                        default: b.append(e);
                    }
                } else {
                    b.append(c);
                }
            }
        }
    }

    static String quote(Object o) {
        if (o instanceof String) {
            return "\"" + ((String) o).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
        }
        if (o instanceof List) {
            return ((List<?>) o).stream().map(Runner::quote).collect(Collectors.joining(", ", "[", "]"));
        }
        if (o instanceof Map) {
            return ((Map<?, ?>) o).entrySet().stream()
                    .map(e -> quote(String.valueOf(e.getKey())) + ": " + quote(e.getValue()))
                    .collect(Collectors.joining(", ", "{", "}"));
        }
        return String.valueOf(o);
    }

    // ---- one scenario on one backend ---------------------------------------------------------------

    @SuppressWarnings("unchecked")
    static final class Run {
        final Map<String, Object> suite;
        final Map<String, Object> scenario;
        final String backend;
        final String prefix;
        final boolean zk;
        final List<String> urls = new ArrayList<>();
        final Map<String, Object> actors;
        final Map<String, ExecutorService> workers = new HashMap<>();
        final Map<String, PolylockClient> clients = new ConcurrentHashMap<>();
        final Map<String, Object> handles = new ConcurrentHashMap<>();
        final Set<String> permitsSet = ConcurrentHashMap.newKeySet();
        final Map<String, Object> saved = new ConcurrentHashMap<>();
        final Map<String, List<LockLostException>> lost = new ConcurrentHashMap<>();
        final Map<String, Object[]> bg = new HashMap<>();
        final Polylock.Options options = new Polylock.Options();

        Run(Map<String, Object> suite, Map<String, Object> scenario, String backend, String prefix) {
            this.suite = suite;
            this.scenario = scenario;
            this.backend = backend;
            this.prefix = prefix;
            Map<String, Object> spec = (Map<String, Object>) ((Map<String, Object>) suite.get("backends")).get(backend);
            this.zk = Boolean.TRUE.equals(spec.get("paths"));
            if (spec.containsKey("env")) {
                String value = System.getenv().getOrDefault((String) spec.get("env"), "");
                List<String> us = Boolean.TRUE.equals(spec.get("list")) ? Arrays.asList(value.split(",")) : Collections.singletonList(value);
                for (String u : us) {
                    urls.add(spec.containsKey("query") ? u + (u.contains("?") ? "&" : "?") + spec.get("query") : u);
                }
            }
            Object a = scenario.get("actors");
            this.actors = (Map<String, Object>) (a != null ? a : suite.get("default_actors"));
            Map<String, Object> o = (Map<String, Object>) suite.get("client");
            options.watchdogTimeout(Duration.ofMillis((Long) o.get("watchdog_timeout_ms")))
                    .connectTimeout(Duration.ofMillis((Long) o.get("connect_timeout_ms")))
                    .commandTimeout(Duration.ofMillis((Long) o.get("command_timeout_ms")))
                    .sessionTimeout(Duration.ofMillis((Long) o.get("session_timeout_ms")))
                    .fairWaitTimeout(Duration.ofMillis((Long) o.get("fair_wait_timeout_ms")));
        }

        ExecutorService worker(String actor) {
            return workers.computeIfAbsent(actor, k -> Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "actor-" + k);
                t.setDaemon(true);
                return t;
            }));
        }

        PolylockClient connect(Object url) {
            if (url instanceof List) {
                return Polylock.connectRedlock((List<String>) url, options);
            }
            return Polylock.connect((String) url, options);
        }

        PolylockClient client(String actor) {
            String cid = (String) actors.get(actor);
            synchronized (clients) {
                PolylockClient c = clients.get(cid);
                if (c == null) {
                    c = connect(urls.size() > 1 ? urls : urls.get(0));
                    clients.put(cid, c);
                }
                return c;
            }
        }

        Map<String, Object> obj(String id) {
            return (Map<String, Object>) ((Map<String, Object>) scenario.get("objects")).get(id);
        }

        String nameOf(String id) {
            Map<String, Object> o = obj(id);
            if (o.containsKey("literal")) {
                return (String) o.get("literal");
            }
            String base = o.containsKey("name") ? (String) o.get("name") : id.toLowerCase();
            return zk ? "/" + prefix + "/" + base : prefix + ":" + base;
        }

        Object handle(String actor, String id) {
            String key = actors.get(actor) + "/" + id;
            Object h = handles.get(key);
            if (h != null) {
                return h;
            }
            PolylockClient client = client(actor);
            Map<String, Object> o = obj(id);
            String name = nameOf(id);
            switch ((String) o.get("type")) {
                case "lock": h = client.getLock(name); break;
                case "fair": h = client.getFairLock(name); break;
                case "mutex": h = client.getMutex(name); break;
                case "read": h = client.getReadWriteLock(name).readLock(); break;
                case "write": h = client.getReadWriteLock(name).writeLock(); break;
                case "semaphore": h = client.getSemaphore(name); break;
                case "permit_semaphore": h = client.getPermitExpirableSemaphore(name); break;
                case "latch": h = client.getCountDownLatch(name); break;
                // Curator's shape: a latch started once; a campaign that gives up, and a
                // resignation, close it (the next campaign of the actor makes a new one).
                case "election": h = client.getLeaderLatch(name, actor); break;
                case "multi": {
                    List<DistributedLock> members = new ArrayList<>();
                    for (Object m : (List<Object>) o.get("of")) {
                        members.add((DistributedLock) handle(actor, (String) m));
                    }
                    h = Polylock.multiLock(members);
                    break;
                }
                default: throw new RunnerException("unknown object type " + o.get("type"));
            }
            if (o.containsKey("permits") && permitsSet.add(id)) {
                int p = ((Long) o.get("permits")).intValue();
                if (h instanceof DistributedSemaphore) {
                    ((DistributedSemaphore) h).trySetPermits(p);
                } else {
                    ((DistributedPermitExpirableSemaphore) h).trySetPermits(p);
                }
            }
            handles.put(key, h);
            return h;
        }

        static long lease(Map<String, Object> step) {
            return step.containsKey("lease") ? (Long) step.get("lease") : -1;
        }

        /** A bounded wait in ms, 0 for none, -1 for forever. */
        static long waitOf(Map<String, Object> step) {
            Object w = step.getOrDefault("wait", "forever");
            if ("forever".equals(w)) {
                return -1;
            }
            if ("none".equals(w)) {
                return 0;
            }
            return (Long) w;
        }

        static Object errorWord(Throwable e) {
            if (!(e instanceof PolylockError)) {
                return outcome("foreign:" + e.getClass().getName(), e.getMessage());
            }
            PolylockError pe = (PolylockError) e;
            if (pe.getNumber() != pe.getCode().number()) {
                return "error:" + pe.getCode() + " with number " + pe.getNumber();
            }
            return outcome("error:" + pe.getCode().name(), e.getMessage());
        }

        static Map<String, Object> outcome(String word, String message) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("outcome", word);
            m.put("message", message == null ? "" : message);
            return m;
        }

        static Map<String, Object> with(String word, String key, Object value) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("outcome", word);
            m.put(key, value);
            return m;
        }

        Object doStep(String actor, Map<String, Object> step) {
            try {
                return doOp(actor, (String) step.get("op"), (String) step.get("on"), step);
            } catch (RunnerException e) {
                return Collections.singletonMap("runnerError", e.getMessage());
            } catch (RuntimeException e) {
                return errorWord(e);
            } catch (InterruptedException e) {
                return Collections.singletonMap("runnerError", "interrupted");
            }
        }

        Object doOp(String actor, String op, String id, Map<String, Object> step) throws InterruptedException {
            TimeUnit ms = TimeUnit.MILLISECONDS;
            switch (op) {
                case "connect": {
                    connect(step.get("url")).close();
                    return "ok";
                }
                case "suspended":
                    return client(actor).isSuspended();
                case "close":
                    client(actor).close();
                    return "ok";
                case "error_table": {
                    List<String> names = new ArrayList<>();
                    PolylockException.Code[] codes = PolylockException.Code.values();
                    for (int i = 0; i < codes.length; i++) {
                        if (codes[i].number() != i + 1) {
                            return "numbers out of order";
                        }
                        names.add(codes[i].name());
                    }
                    return names;
                }
                default:
                    break;
            }
            Object h = handle(actor, id);
            switch (op) {
                case "make":
                    return "ok";
                case "acquire": {
                    DistributedLock l = (DistributedLock) h;
                    long wait = waitOf(step);
                    long lease = lease(step);
                    boolean got;
                    if (wait < 0) {
                        if ("alt".equals(step.get("spelling"))) {
                            l.lockInterruptibly(lease, ms);
                        } else if (lease < 0) {
                            l.lock();
                        } else {
                            l.lock(lease, ms);
                        }
                        got = true;
                    } else if (wait == 0 && lease < 0) {
                        got = l.tryLock();
                    } else {
                        got = l.tryLock(wait, lease, ms);
                    }
                    return got ? with("acquired", "token", l.getFencingToken()) : "not_acquired";
                }
                case "release":
                    ((DistributedLock) h).unlock();
                    return "ok";
                case "held":
                    return (long) ((DistributedLock) h).getHoldCount();
                case "is_locked":
                    return ((DistributedLock) h).isLocked();
                case "token":
                    return with("token", "token", ((DistributedLock) h).getFencingToken());
                case "remaining_lease": {
                    long left = ((DistributedLock) h).remainTimeToLive();
                    if (left == -2) {
                        return "not_held";
                    }
                    if (left == -1) {
                        return "no_expiry";
                    }
                    return left >= 0 ? with("expires", "ms", left) : "remainTimeToLive " + left;
                }
                case "force_unlock":
                    return ((DistributedLock) h).forceUnlock();
                case "is_lost":
                    return ((DistributedLock) h).isLost();
                case "listen": {
                    List<LockLostException> seen = lost.computeIfAbsent(actor + "/" + id, k -> new CopyOnWriteArrayList<>());
                    if (h instanceof DistributedLock) {
                        ((DistributedLock) h).addListener((lock, cause) -> seen.add((LockLostException) cause));
                    } else if (h instanceof DistributedPermitExpirableSemaphore) {
                        ((DistributedPermitExpirableSemaphore) h).addListener((s, cause) -> seen.add(cause));
                    } else {
                        ((DistributedSemaphore) h).addListener((s, cause) -> seen.add(cause));
                    }
                    return "ok";
                }
                case "wait_lost": {
                    List<LockLostException> seen = lost.get(actor + "/" + id);
                    if (seen == null) {
                        throw new RunnerException("wait_lost without listen");
                    }
                    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos((Long) step.getOrDefault("within", 5000L));
                    while (System.nanoTime() < deadline) {
                        if (!seen.isEmpty()) {
                            LockLostException e = seen.get(0);
                            if (e.getReason() == null || !REASONS.contains(e.getReason().name())) {
                                return "lost with a reason outside the contract: " + e.getReason();
                            }
                            return "lost:" + e.getReason().name();
                        }
                        Thread.sleep(20);
                    }
                    return "not_lost";
                }
                case "section": {
                    long wait = waitOf(step);
                    try (DistributedLock.Hold held = wait < 0 ? ((DistributedLock) h).hold() : ((DistributedLock) h).hold(wait, -1, ms)) {
                        return held.getFencingToken() >= 0 ? "ran" : "a hold without a token";
                    } catch (LockTimeoutException e) {
                        if (!(e instanceof PolylockException)) {
                            return "the timeout error is not a PolylockException";
                        }
                        throw e;
                    }
                }
                case "extend":
                    throw new RunnerException("Java has no lease extension (see the scenario's not_applicable)");
                case "sem_set":
                    return ((DistributedSemaphore) h).trySetPermits(((Long) step.get("n")).intValue());
                case "sem_acquire": {
                    DistributedSemaphore s = (DistributedSemaphore) h;
                    int n = ((Long) step.getOrDefault("n", 1L)).intValue();
                    long wait = waitOf(step);
                    if (wait < 0) {
                        s.acquire(n);
                        return "acquired";
                    }
                    boolean got = wait == 0 ? s.tryAcquire(n) : s.tryAcquire(n, wait, ms);
                    return got ? "acquired" : "not_acquired";
                }
                case "sem_release":
                    ((DistributedSemaphore) h).release(((Long) step.getOrDefault("n", 1L)).intValue());
                    return "ok";
                case "sem_available":
                    return (long) ((DistributedSemaphore) h).availablePermits();
                case "sem_add":
                    ((DistributedSemaphore) h).addPermits(((Long) step.get("n")).intValue());
                    return "ok";
                case "sem_drain":
                    return (long) ((DistributedSemaphore) h).drainPermits();
                case "permit_acquire": {
                    DistributedPermitExpirableSemaphore s = (DistributedPermitExpirableSemaphore) h;
                    long wait = waitOf(step);
                    long lease = lease(step);
                    String got;
                    if (wait < 0) {
                        got = lease < 0 ? s.acquire() : s.acquire(lease, ms);
                    } else {
                        got = s.tryAcquire(wait, lease, ms);
                    }
                    return got == null ? "not_acquired" : with("acquired", "id", got);
                }
                case "permit_release":
                    ((DistributedPermitExpirableSemaphore) h).release((String) saved.get((String) step.get("id")));
                    return "ok";
                case "permit_available":
                    return (long) ((DistributedPermitExpirableSemaphore) h).availablePermits();
                case "latch_set":
                    return ((DistributedCountDownLatch) h).trySetCount((Long) step.get("n"));
                case "latch_count_down":
                    ((DistributedCountDownLatch) h).countDown();
                    return "ok";
                case "latch_count":
                    return ((DistributedCountDownLatch) h).getCount();
                case "campaign": {
                    DistributedLeaderLatch latch = (DistributedLeaderLatch) h;
                    if (!latch.hasLeadership()) {
                        try {
                            latch.start();
                        } catch (IllegalStateException startedBefore) {
                            // campaigning already
                        }
                    }
                    long wait = waitOf(step);
                    boolean leads;
                    if (wait < 0) {
                        latch.await();
                        leads = true;
                    } else {
                        leads = latch.await(wait, ms);
                    }
                    if (leads) {
                        return with("leading", "token", latch.getTerm());
                    }
                    // The contract's campaign withdraws when its wait runs out; Curator's latch
                    // would campaign on: close it.
                    latch.close();
                    handles.remove(actors.get(actor) + "/" + id);
                    return "not_leading";
                }
                case "resign": {
                    DistributedLeaderLatch latch = (DistributedLeaderLatch) h;
                    boolean was = latch.hasLeadership();
                    latch.close();
                    handles.remove(actors.get(actor) + "/" + id);
                    return was;
                }
                case "is_leader":
                    return ((DistributedLeaderLatch) h).hasLeadership();
                case "leader": {
                    // Curator's Participant carries no term: Java's answer has none to compare.
                    Participant p = ((DistributedLeaderLatch) h).getLeader();
                    return p.isLeader() ? "leader:" + p.getId() : "none";
                }
                case "candidates": {
                    List<Object> ids = new ArrayList<>();
                    for (Participant p : ((DistributedLeaderLatch) h).getParticipants()) {
                        ids.add(p.getId());
                    }
                    return ids;
                }
                case "latch_wait": {
                    DistributedCountDownLatch d = (DistributedCountDownLatch) h;
                    long wait = waitOf(step);
                    if (wait < 0) {
                        d.await();
                        return "open";
                    }
                    return d.await(wait, ms) ? "open" : "not_open";
                }
                default:
                    throw new RunnerException("unknown op " + op);
            }
        }

        Object expected(Map<String, Object> step) {
            Object e = step.get("expect");
            if (e instanceof Map) {
                Map<String, Object> by = (Map<String, Object>) e;
                return by.containsKey(backend) ? by.get(backend) : by.get("*");
            }
            return e;
        }

        String compareToken(String want, Object got) {
            if (!(got instanceof Long)) {
                return "no token (" + got + ")";
            }
            Object prev = saved.get(want.substring(1));
            if (!(prev instanceof Long)) {
                return "no saved token " + want.substring(1);
            }
            long g = (Long) got;
            long p = (Long) prev;
            char op = want.charAt(0);
            if ((op == '>' && g > p) || (op == '=' && g == p)) {
                return null;
            }
            return g + " is not " + op + " " + p;
        }

        String check(Map<String, Object> step, Object got) {
            if (got instanceof Map && ((Map<String, Object>) got).containsKey("runnerError")) {
                return "runner: " + ((Map<String, Object>) got).get("runnerError");
            }
            Object expect = expected(step);
            Map<String, Object> extra = got instanceof Map ? (Map<String, Object>) got : Collections.emptyMap();
            Object word = extra.containsKey("outcome") ? extra.get("outcome") : got;
            if ("token".equals(step.get("op"))) {
                return compareToken((String) expect, extra.get("token"));
            }
            if (!quote(word).equals(quote(expect))) {
                return "expected " + quote(expect) + ", got " + quote(word) + " " + extra.getOrDefault("message", "");
            }
            if (step.containsKey("message") && !String.valueOf(extra.get("message")).contains((String) step.get("message"))) {
                return "the message does not name " + step.get("message") + ": " + extra.get("message");
            }
            if (step.containsKey("absent") && String.valueOf(extra.get("message")).contains((String) step.get("absent"))) {
                return "the error shows " + step.get("absent") + ": " + extra.get("message");
            }
            if (extra.containsKey("token")) {
                if (step.containsKey("token")) {
                    String why = compareToken((String) step.get("token"), extra.get("token"));
                    if (why != null) {
                        return "token: " + why;
                    }
                }
                if (step.containsKey("save")) {
                    saved.put((String) step.get("save"), extra.get("token"));
                }
            }
            if (extra.containsKey("id") && step.containsKey("save")) {
                saved.put((String) step.get("save"), extra.get("id"));
            }
            if (extra.containsKey("ms")) {
                long left = (Long) extra.get("ms");
                if (step.containsKey("max_ms") && left > (Long) step.get("max_ms")) {
                    return left + " ms left, more than " + step.get("max_ms");
                }
                if (step.containsKey("min_ms") && left < (Long) step.get("min_ms")) {
                    return left + " ms left, less than " + step.get("min_ms");
                }
            }
            return null;
        }

        String run() {
            try {
                List<Object> steps = (List<Object>) scenario.get("steps");
                for (int i = 0; i < steps.size(); i++) {
                    Map<String, Object> step = (Map<String, Object>) steps.get(i);
                    String op = (String) step.get("op");
                    if ("sleep".equals(op)) {
                        Thread.sleep((Long) step.get("ms"));
                        continue;
                    }
                    String actor = (String) step.get("actor");
                    if ("join".equals(op)) {
                        Object[] b = bg.remove(actor);
                        Map<String, Object> bstep = (Map<String, Object>) b[0];
                        String why = check(bstep, ((Future<?>) b[1]).get(120, TimeUnit.SECONDS));
                        if (why != null) {
                            return "step " + i + " (join " + bstep.get("op") + "): " + why;
                        }
                        continue;
                    }
                    Future<Object> f = worker(actor).submit(() -> doStep(actor, step));
                    if (Boolean.TRUE.equals(step.get("bg"))) {
                        bg.put(actor, new Object[] {step, f});
                        continue;
                    }
                    String why = check(step, f.get(120, TimeUnit.SECONDS));
                    if (why != null) {
                        return "step " + i + " (" + op + " " + step.getOrDefault("on", "") + "): " + why;
                    }
                }
                return null;
            } catch (Exception e) {
                return "runner: " + e;
            } finally {
                for (PolylockClient c : clients.values()) {
                    try {
                        c.close();
                    } catch (RuntimeException ignored) {
                        // closed by the scenario, or never connected
                    }
                }
                for (ExecutorService w : workers.values()) {
                    w.shutdownNow();
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        List<String> a = Arrays.asList(args);
        if (a.contains("--vocabulary")) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("runtime", RUNTIME);
            out.put("says", VOCABULARY);
            // The class each kind is thrown as: asked of the JAR's own mapping.
            java.lang.reflect.Method fromNative = PolylockException.class.getDeclaredMethod("fromNative", int.class, String.class);
            fromNative.setAccessible(true);
            List<Object> errors = new ArrayList<>();
            for (PolylockException.Code c : PolylockException.Code.values()) {
                Object e = fromNative.invoke(null, c.number(), "");
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("number", (long) c.number());
                row.put("name", c.name());
                row.put("says", "`" + e.getClass().getSimpleName() + "`" + (e instanceof PolylockError ? "" : " (no code: C's NULL_PARAMETER)"));
                errors.add(row);
            }
            out.put("errors", errors);
            System.out.println(quote(out));
            return;
        }
        String root = a.contains("--scenarios") ? a.get(a.indexOf("--scenarios") + 1) : "conformance";
        String only = a.contains("--only") ? a.get(a.indexOf("--only") + 1) : null;
        int jobs = a.contains("--jobs") ? Integer.parseInt(a.get(a.indexOf("--jobs") + 1)) : 4;
        boolean verbose = a.contains("-v");
        Map<String, Object> suite = (Map<String, Object>) Json.parse(new String(Files.readAllBytes(Paths.get(root, "suite.json")), "UTF-8"));
        List<Path> files;
        try (Stream<Path> s = Files.list(Paths.get(root, "scenarios"))) {
            files = s.filter(p -> p.toString().endsWith(".json")).sorted().collect(Collectors.toList());
        }
        List<String> labels = new ArrayList<>();
        List<Run> runs = new ArrayList<>();
        int na = 0;
        long pid = ProcessHandle.current().pid();
        AtomicInteger serial = new AtomicInteger();
        for (Path f : files) {
            Map<String, Object> doc = (Map<String, Object>) Json.parse(new String(Files.readAllBytes(f), "UTF-8"));
            for (Object o : (List<Object>) doc.get("scenarios")) {
                Map<String, Object> sc = (Map<String, Object>) o;
                String id = (String) sc.get("id");
                if (only != null && !id.contains(only)) {
                    continue;
                }
                Map<String, Object> nas = (Map<String, Object>) sc.getOrDefault("not_applicable", Collections.emptyMap());
                for (Object b : (List<Object>) sc.get("backends")) {
                    if (nas.containsKey(RUNTIME) || nas.containsKey(RUNTIME + "@" + b)) {
                        na++;
                        continue;
                    }
                    labels.add(id + "@" + b);
                    runs.add(new Run(suite, sc, (String) b, "pc/" + RUNTIME + "-" + pid + "-" + serial.incrementAndGet()));
                }
            }
        }
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, jobs));
        List<Future<String>> results = new ArrayList<>();
        for (Run r : runs) {
            results.add(pool.submit(r::run));
        }
        int passed = 0;
        int failed = 0;
        for (int i = 0; i < runs.size(); i++) {
            String why;
            try {
                why = results.get(i).get(180, TimeUnit.SECONDS);
            } catch (Exception e) {
                why = "did not finish: " + e;
            }
            if (why == null) {
                passed++;
                if (verbose) {
                    System.out.println("ok   " + labels.get(i));
                }
            } else {
                failed++;
                System.out.println("FAIL " + labels.get(i) + ": " + why);
            }
        }
        pool.shutdownNow();
        System.out.println("conformance " + RUNTIME + ": " + passed + " passed, " + failed + " failed, " + na + " not applicable");
        System.out.flush();
        Runtime.getRuntime().halt(failed == 0 ? 0 : 1);
    }
}
