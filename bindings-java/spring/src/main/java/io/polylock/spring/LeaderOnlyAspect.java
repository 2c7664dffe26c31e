package io.polylock.spring;

import io.polylock.DistributedLeaderLatch;
import io.polylock.PolylockClient;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.aspectj.lang.ProceedingJoinPoint;
import org.aspectj.lang.annotation.Around;
import org.aspectj.lang.annotation.Aspect;
import org.aspectj.lang.reflect.MethodSignature;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.core.Ordered;

/**
 * Serves {@link LeaderOnly}: one started {@link DistributedLeaderLatch} per election (and
 * backend) for this instance; a call proceeds only while that latch leads. The latches close
 * with the context.
 */
@Aspect
public class LeaderOnlyAspect implements Ordered, DisposableBean {
    private final PolylockClient client;
    private final PolylockBackends backends;
    private final String id;
    private final int order;
    private final Map<String, DistributedLeaderLatch> latches = new ConcurrentHashMap<>();

    public LeaderOnlyAspect(PolylockClient client, PolylockBackends backends, String id, int order) {
        this.client = Objects.requireNonNull(client, "client");
        this.backends = backends;
        this.id = Objects.requireNonNull(id, "id");
        this.order = order;
    }

    @Override
    public int getOrder() {
        return order;
    }

    /** The id this instance campaigns with. */
    public String getId() {
        return id;
    }

    /** This instance's latch of the election {@code name} on {@code backend} ("" = default). */
    public DistributedLeaderLatch latch(String name, String backend) {
        return latches.computeIfAbsent(backend + "\u0000" + name, k -> {
            PolylockClient on = backend.isEmpty() ? client : backends.client(backend);
            DistributedLeaderLatch latch = on.getLeaderLatch(name, id);
            latch.start();
            return latch;
        });
    }

    @Around(value = "@annotation(leaderOnly)", argNames = "pjp,leaderOnly")
    public Object around(ProceedingJoinPoint pjp, LeaderOnly leaderOnly) throws Throwable {
        Method method = ((MethodSignature) pjp.getSignature()).getMethod();
        if (!leaderOnly.backend().isEmpty() && backends == null) {
            throw new IllegalArgumentException("@LeaderOnly(backend = \"" + leaderOnly.backend() + "\") on "
                    + method + ": no polylock.backends are configured");
        }
        if (!latch(leaderOnly.value(), leaderOnly.backend()).hasLeadership()) {
            return DistributedLockedAspect.skippedResult(method.getReturnType());
        }
        return pjp.proceed();
    }

    @Override
    public void destroy() {
        latches.values().forEach(DistributedLeaderLatch::close);
        latches.clear();
    }
}
