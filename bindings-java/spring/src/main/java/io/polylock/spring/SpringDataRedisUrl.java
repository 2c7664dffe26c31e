package io.polylock.spring;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import org.springframework.core.env.Environment;

/**
 * A polylock URL from Spring Data Redis's properties ({@code spring.data.redis.*}), for an
 * application that configured Redis for Spring Data and set no {@code polylock.url}: {@code url}
 * as it is; else a Sentinel ({@code sentinel.master}, {@code sentinel.nodes}), a Cluster ({@code
 * cluster.nodes}) or one server ({@code host}, {@code port}, {@code database}), with {@code
 * username}, {@code password} and {@code ssl.enabled}. Every URL form: docs/src/contract.md#urls.
 */
final class SpringDataRedisUrl {
    private static final String P = "spring.data.redis.";

    private SpringDataRedisUrl() {}

    /** The URL, or null when no {@code spring.data.redis.*} property is set. */
    static String of(Environment env) {
        String url = env.getProperty(P + "url");
        if (url != null && !url.isBlank()) {
            return url;
        }
        boolean ssl = Boolean.parseBoolean(env.getProperty(P + "ssl.enabled", "false"));
        String user = env.getProperty(P + "username");
        String password = env.getProperty(P + "password");
        String auth = "";
        if (password != null && !password.isEmpty()) {
            auth = (user == null ? "" : encode(user)) + ":" + encode(password) + "@";
        }
        String database = env.getProperty(P + "database");
        String db = database == null || database.isBlank() || database.equals("0") ? "" : "/" + database.trim();
        String master = env.getProperty(P + "sentinel.master");
        String sentinels = env.getProperty(P + "sentinel.nodes");
        if (master != null && sentinels != null) {
            String query = "";
            String sentinelPassword = env.getProperty(P + "sentinel.password");
            if (sentinelPassword != null && !sentinelPassword.isEmpty()) {
                String sentinelUser = env.getProperty(P + "sentinel.username");
                query = "?sentinel_password=" + encode(sentinelPassword)
                        + (sentinelUser == null ? "" : "&sentinel_user=" + encode(sentinelUser));
            }
            return (ssl ? "rediss" : "redis") + "+sentinel://" + auth + nodes(sentinels) + "/" + master.trim() + db + query;
        }
        String cluster = env.getProperty(P + "cluster.nodes");
        if (cluster != null && !cluster.isBlank()) {
            return (ssl ? "rediss" : "redis") + "+cluster://" + auth + nodes(cluster);
        }
        String host = env.getProperty(P + "host");
        String port = env.getProperty(P + "port");
        if (host == null && port == null && password == null && database == null
                && env.getProperty(P + "ssl.enabled") == null) {
            return null;
        }
        return (ssl ? "rediss" : "redis") + "://" + auth + (host == null ? "localhost" : host.trim()) + ":"
                + (port == null ? "6379" : port.trim()) + db;
    }

    /** A comma-separated node list without spaces. */
    private static String nodes(String list) {
        return String.join(",", java.util.Arrays.stream(list.split(",")).map(String::trim)
                .filter(s -> !s.isEmpty()).toArray(String[]::new));
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
