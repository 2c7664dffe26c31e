package io.polylock.spring;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The named lock servers of {@code polylock.backends.<name>=<url>} ({@code
 * polylock.backends.zk=zk://zk1:2181,zk2:2181}), for {@link DistributedLocked#backend()}: one
 * client each, connected on first use with the options of {@code polylock.*}, closed with the
 * context.
 */
public class PolylockBackends implements AutoCloseable {
    private final Map<String, String> urls;
    private final Polylock.Options options;
    private final Map<String, PolylockClient> clients = new ConcurrentHashMap<>();
    private volatile boolean closed;

    public PolylockBackends(Map<String, String> urls, Polylock.Options options) {
        this.urls = new TreeMap<>(Objects.requireNonNull(urls, "urls"));
        this.options = Objects.requireNonNull(options, "options");
    }

    /**
     * The client of backend {@code name}.
     *
     * @throws IllegalArgumentException if no {@code polylock.backends.<name>} is configured
     */
    public PolylockClient client(String name) {
        String url = urls.get(name);
        if (url == null || url.isBlank()) {
            throw new IllegalArgumentException("no polylock.backends." + name + " is configured (known: "
                    + urls.keySet() + ")");
        }
        if (closed) {
            throw new IllegalStateException("the polylock backends are closed");
        }
        return clients.computeIfAbsent(name, n -> Polylock.connect(url, options));
    }

    @Override
    public void close() {
        closed = true;
        clients.values().forEach(PolylockClient::close);
        clients.clear();
    }
}
