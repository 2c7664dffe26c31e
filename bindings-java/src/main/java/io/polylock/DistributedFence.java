package io.polylock;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * The fence of one name on the lock server's own Redis: fenced writes of Redis commands under a
 * lock's fencing token. From {@link PolylockClient#getFence(String)} (Redis only: an {@link
 * UnsupportedException} on ZooKeeper, etcd, SQL and RedLock, whose data is fenced by {@link
 * JdbcFence} in the application's own transaction).
 *
 * <p>The fence keeps the largest token it accepted for the name (at {@code polylock_fence:{name}})
 * and runs a write only if its token is not smaller, atomically with the check: a holder that
 * paused past its lease cannot write after the next holder did.
 *
 * <pre>{@code
 * DistributedLock lock = client.getLock("sale");
 * lock.lock();
 * try {
 *     client.fencedWrite("sale", lock.getFencingToken(), List.of(List.of("DECR", "{sale}:stock")));
 * } finally {
 *     lock.unlock();
 * }
 * }</pre>
 */
public final class DistributedFence {
    private final String name;
    private final NativeHandle handle;

    DistributedFence(String name, long nativeFence) {
        this.name = name;
        this.handle = NativeHandle.own(nativeFence, this, Native::fenceFree, "fence");
    }

    /** The fence's name: the lock's whose tokens it compares. */
    public String getName() {
        return name;
    }

    /**
     * Run {@code commands} (each a list: the command's name, then its arguments as {@code
     * String}, {@code byte[]} or {@code Number}) in one atomic step if {@code token} is not
     * smaller than the largest token this fence accepted, recording it; their replies, in order:
     * {@code null}, a {@code Long}, a {@code String} (a status, or bulk text that is UTF-8), a
     * {@code byte[]} (other bulk bytes) or a {@code List<Object>} (an array reply). In a Redis
     * Cluster the keys must carry the name's hash tag ({@code {name}}).
     *
     * @throws StaleTokenException if a larger token was accepted (nothing ran); the same token may
     *     write any number of times
     * @throws InvalidArgumentException for a token below 1, no command or an empty one
     */
    public List<Object> write(long token, List<? extends List<?>> commands) {
        byte[][][] bytes = commands(commands);
        long h = handle.enter();
        try {
            return replies(Native.fenceWrite(h, token, bytes));
        } finally {
            handle.exit();
        }
    }

    /** The largest token this fence accepted, if any. */
    public OptionalLong accepted() {
        long h = handle.enter();
        try {
            long t = Native.fenceAccepted(h);
            return t == 0 ? OptionalLong.empty() : OptionalLong.of(t);
        } finally {
            handle.exit();
        }
    }

    static byte[][][] commands(List<? extends List<?>> commands) {
        Objects.requireNonNull(commands, "commands");
        byte[][][] out = new byte[commands.size()][][];
        for (int i = 0; i < out.length; i++) {
            List<?> command = Objects.requireNonNull(commands.get(i), "command");
            out[i] = new byte[command.size()][];
            for (int j = 0; j < out[i].length; j++) {
                out[i][j] = arg(command.get(j));
            }
        }
        return out;
    }

    private static byte[] arg(Object a) {
        if (a instanceof byte[]) {
            return (byte[]) a;
        }
        if (a instanceof CharSequence || a instanceof Number) {
            return a.toString().getBytes(StandardCharsets.UTF_8);
        }
        throw new InvalidArgumentException(
                "a command's argument is a String, byte[] or Number, got "
                        + (a == null ? "null" : a.getClass().getName()));
    }

    private static List<Object> replies(Object[] replies) {
        List<Object> out = new ArrayList<>(replies.length);
        for (Object r : replies) {
            out.add(r instanceof Object[] ? replies((Object[]) r) : r);
        }
        return Collections.unmodifiableList(out);
    }

    @Override
    public String toString() {
        return "DistributedFence[" + name + "]";
    }
}
