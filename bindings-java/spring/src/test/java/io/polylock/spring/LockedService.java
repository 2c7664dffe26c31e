package io.polylock.spring;

import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.springframework.stereotype.Service;

/** Annotated methods that run the test's body under the lock. */
@Service
public class LockedService {
    @DistributedLocked(key = "'order:' + #orderId")
    public String byOrder(String orderId, Supplier<String> body) {
        return body.get();
    }

    @DistributedLocked(key = "#key")
    public void run(String key, Runnable body) {
        body.run();
    }

    @DistributedLocked(key = "'/spring-test/' + #id", backend = "zk")
    public void onZooKeeper(String id, Runnable body) {
        body.run();
    }

    @DistributedLocked(key = "#key", backend = "nowhere")
    public void onAnUnknownBackend(String key, Runnable body) {
        body.run();
    }

    @DistributedLocked(key = "#key", interruptOnLost = true)
    public void interruptible(String key, Runnable body) {
        body.run();
    }

    @DistributedLocked(key = "#key", skipIfLocked = true)
    public String skipping(String key, Supplier<String> body) {
        return body.get();
    }

    @DistributedLocked(key = "#key", skipIfLocked = true)
    public Optional<String> skippingOptional(String key, Supplier<String> body) {
        return Optional.of(body.get());
    }

    @DistributedLocked(key = "#key", skipIfLocked = true)
    public int skippingInt(String key, Supplier<Integer> body) {
        return body.get();
    }

    @DistributedLocked(key = "#key", waitTime = 300)
    public void bounded(String key, Runnable body) {
        body.run();
    }

    @DistributedLocked(key = "#key", leaseTime = 3, timeUnit = TimeUnit.SECONDS)
    public void leased(String key, Runnable body) {
        body.run();
    }

    @DistributedLocked(key = "#key", fair = true)
    public void fair(String key, Runnable body) {
        body.run();
    }
}
