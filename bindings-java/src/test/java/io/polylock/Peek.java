package io.polylock;

import java.util.Map;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * Reads a Redis server directly (through a plain Redisson client, as strings), to check what
 * polylock left there: whether a key exists, a hash's fields, a list's length.
 */
final class Peek implements AutoCloseable {
    private final RedissonClient redis;

    Peek(String url) {
        Config config = new Config();
        config.useSingleServer().setAddress(url).setConnectionMinimumIdleSize(1).setConnectionPoolSize(2)
                .setSubscriptionConnectionMinimumIdleSize(0);
        redis = Redisson.create(config);
    }

    /** EXISTS: 1 or 0. */
    long exists(String key) {
        return redis.getKeys().countExists(key);
    }

    /** HGETALL. */
    Map<String, String> hash(String key) {
        return redis.<String, String>getMap(key, StringCodec.INSTANCE).readAllMap();
    }

    /** GET, as a string; null when the key is missing. */
    String get(String key) {
        return redis.<String>getBucket(key, StringCodec.INSTANCE).get();
    }

    /** LLEN. */
    int length(String key) {
        return redis.getList(key, StringCodec.INSTANCE).size();
    }

    @Override
    public void close() {
        redis.shutdown();
    }
}
