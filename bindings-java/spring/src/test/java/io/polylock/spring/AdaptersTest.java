package io.polylock.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.polylock.LockTimeoutException;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.PolylockException;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.integration.aggregator.AggregatingMessageHandler;
import org.springframework.integration.aggregator.DefaultAggregatingMessageGroupProcessor;
import org.springframework.integration.aggregator.MessageCountReleaseStrategy;
import org.springframework.integration.channel.QueueChannel;
import org.springframework.integration.support.MessageBuilder;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.messaging.Message;

/**
 * polylock as Spring Integration's {@link LockRegistry} and ShedLock's {@link LockProvider}, each
 * driven by the real library (Spring Integration's aggregator and {@code executeLocked}, ShedLock's
 * {@link DefaultLockingTaskExecutor} and its own JDBC provider on the same table), on the real
 * Redis and PostgreSQL of scripts/servers.sh; the starter's beans and its fallback to {@code
 * spring.data.redis.*}; and Spring's timeout as polylock's one Java timeout error.
 */
class AdaptersTest {
    private static final String PG = System.getenv().getOrDefault("POLYLOCK_PG_URL",
            "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock");

    @Test
    void theRegistryHandsOutPolylockLocksThatExcludeAcrossClients() throws Exception {
        try (PolylockClient a = Polylock.connect(RedisProbe.URL); PolylockClient b = Polylock.connect(RedisProbe.URL)) {
            LockRegistry ra = new PolylockLockRegistry(a);
            LockRegistry rb = new PolylockLockRegistry(b);
            String key = "order-" + UUID.randomUUID();
            Lock la = ra.obtain(key);
            la.lock();
            assertThat(rb.obtain(key).tryLock()).as("another client's lock of the key").isFalse();
            assertThat(a.getLock("spring-integration:" + key).isLocked()).isTrue();
            la.unlock();
            // Spring Integration's own helper around obtain/lock/unlock.
            AtomicInteger ran = new AtomicInteger();
            rb.executeLocked(key, () -> {
                assertThat(b.getLock("spring-integration:" + key).isHeldByCurrentThread()).isTrue();
                ran.incrementAndGet();
            });
            assertThat(ran).hasValue(1);
            assertThat(a.getLock("spring-integration:" + key).isLocked()).isFalse();
        }
    }

    @Test
    void anAggregatorTakesItsGroupLocksFromTheRegistry() throws Exception {
        try (PolylockClient client = Polylock.connect(RedisProbe.URL)) {
            List<String> obtained = new ArrayList<>();
            PolylockLockRegistry polylock = new PolylockLockRegistry(client);
            LockRegistry counting = key -> {
                synchronized (obtained) {
                    obtained.add(String.valueOf(key));
                }
                return polylock.obtain(key);
            };
            AggregatingMessageHandler aggregator = new AggregatingMessageHandler(new DefaultAggregatingMessageGroupProcessor());
            aggregator.setLockRegistry(counting);
            aggregator.setReleaseStrategy(new MessageCountReleaseStrategy(2));
            QueueChannel out = new QueueChannel();
            aggregator.setOutputChannel(out);
            aggregator.setBeanFactory(new DefaultListableBeanFactory());
            aggregator.afterPropertiesSet();
            String group = "g-" + UUID.randomUUID();
            for (String payload : new String[] {"a", "b"}) {
                aggregator.handleMessage(MessageBuilder.withPayload(payload).setCorrelationId(group)
                        .setSequenceNumber(payload.equals("a") ? 1 : 2).setSequenceSize(2).build());
            }
            Message<?> released = out.receive(5000);
            assertThat(released).isNotNull();
            assertThat(new ArrayList<Object>((List<?>) released.getPayload())).containsExactlyInAnyOrder("a", "b");
            assertThat(obtained).isNotEmpty();
            // The aggregator let its locks go: the group's lock is free on the server.
            assertThat(client.getLock("spring-integration:" + obtained.get(0)).isLocked()).isFalse();
        }
    }

    @Test
    void shedLocksExecutorRunsOneAtATimeAcrossClients() throws Exception {
        try (PolylockClient a = Polylock.connect(RedisProbe.URL); PolylockClient b = Polylock.connect(RedisProbe.URL);
                PolylockLockProvider pa = new PolylockLockProvider(a, "shedlock:");
                PolylockLockProvider pb = new PolylockLockProvider(b, "shedlock:")) {
            LockingTaskExecutor ea = new DefaultLockingTaskExecutor(pa);
            LockingTaskExecutor eb = new DefaultLockingTaskExecutor(pb);
            String task = "report-" + UUID.randomUUID();
            AtomicInteger runs = new AtomicInteger();
            ea.executeWithLock((Runnable) () -> {
                runs.incrementAndGet();
                // While it runs, the task runs nowhere else: not through the other client, and not
                // through this provider on another thread (the hold is not a thread's). (A nested
                // call on the same thread is ShedLock's own business: it runs it without locking.)
                java.util.concurrent.CompletableFuture.runAsync(() -> {
                    eb.executeWithLock((Runnable) runs::incrementAndGet, config(task, 10_000, 0));
                    ea.executeWithLock((Runnable) runs::incrementAndGet, config(task, 10_000, 0));
                }).join();
            }, config(task, 10_000, 0));
            assertThat(runs).as("only the first run ran").hasValue(1);
            eb.executeWithLock((Runnable) runs::incrementAndGet, config(task, 10_000, 0));
            assertThat(runs).as("free once the first ended").hasValue(2);
            // lockAtLeastFor keeps it after the task ends, then lets it go.
            ea.executeWithLock((Runnable) runs::incrementAndGet, config(task, 10_000, 700));
            eb.executeWithLock((Runnable) runs::incrementAndGet, config(task, 10_000, 0));
            assertThat(runs).hasValue(3);
            Thread.sleep(1200);
            eb.executeWithLock((Runnable) runs::incrementAndGet, config(task, 10_000, 0));
            assertThat(runs).hasValue(4);
            // lockAtMostFor is the lease: a holder that never unlocks loses it then.
            SimpleLock never = pa.lock(config(task, 400, 0)).orElseThrow();
            assertThat(pb.lock(config(task, 400, 0))).isEmpty();
            Thread.sleep(900);
            SimpleLock next = pb.lock(config(task, 10_000, 0)).orElseThrow();
            next.unlock();
            assertThat(never).isNotNull();
        }
    }

    @Test
    void onShedLocksTableItExcludesShedLocksOwnJdbcProvider() throws Exception {
        URI u = URI.create(PG);
        String[] user = u.getUserInfo().split(":", 2);
        DriverManagerDataSource ds = new DriverManagerDataSource(
                "jdbc:postgresql://" + u.getHost() + ":" + u.getPort() + u.getPath(), user[0], user[1]);
        LockProvider shedlock = new JdbcTemplateLockProvider(JdbcTemplateLockProvider.Configuration.builder()
                .withJdbcTemplate(new JdbcTemplate(ds)).withTableName("shedlock").usingDbTime().build());
        try (PolylockClient client = Polylock.connect(PG + "?mode=table");
                PolylockLockProvider polylock = new PolylockLockProvider(client)) {
            String task = "pc-shed-" + UUID.randomUUID().toString().substring(0, 8);
            SimpleLock ours = polylock.lock(config(task, 10_000, 0)).orElseThrow();
            assertThat(shedlock.lock(config(task, 10_000, 0))).as("ShedLock's provider, same row").isEmpty();
            ours.unlock();
            SimpleLock theirs = shedlock.lock(config(task, 10_000, 0)).orElseThrow();
            assertThat(polylock.lock(config(task, 10_000, 0))).as("polylock, behind ShedLock's row").isEmpty();
            theirs.unlock();
            AtomicInteger runs = new AtomicInteger();
            new DefaultLockingTaskExecutor(polylock).executeWithLock((Runnable) runs::incrementAndGet, config(task, 10_000, 0));
            assertThat(runs).hasValue(1);
        }
    }

    private static LockConfiguration config(String name, long atMostMs, long atLeastMs) {
        return new LockConfiguration(Instant.now(), name, Duration.ofMillis(atMostMs), Duration.ofMillis(atLeastMs));
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(PolylockAutoConfiguration.class, AopAutoConfiguration.class));

    @Test
    void theStarterMakesTheRegistryAndTheProvider() {
        runner.withPropertyValues("polylock.url=" + RedisProbe.URL, "polylock.integration.prefix=si:").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(PolylockLockRegistry.class)
                    .hasSingleBean(PolylockLockProvider.class);
            assertThat(context.getBean(PolylockLockRegistry.class).getPrefix()).isEqualTo("si:");
            assertThat(context.getBean(LockRegistry.class)).isInstanceOf(PolylockLockRegistry.class);
            assertThat(context.getBean(LockProvider.class)).isInstanceOf(PolylockLockProvider.class);
        });
    }

    @Test
    void withoutPolylockUrlTheStarterTakesSpringDataRedis() {
        URI redis = URI.create(RedisProbe.URL);
        runner.withPropertyValues("spring.data.redis.host=" + redis.getHost(), "spring.data.redis.port=" + redis.getPort())
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(PolylockClient.class);
                    PolylockClient client = context.getBean(PolylockClient.class);
                    String name = "spring-test:data-redis:" + UUID.randomUUID();
                    client.getLock(name).lock();
                    try (PolylockClient probe = Polylock.connect(RedisProbe.URL)) {
                        assertThat(probe.getLock(name).isLocked()).as("the same Redis").isTrue();
                    }
                    client.getLock(name).unlock();
                });
        runner.withPropertyValues("spring.data.redis.url=" + RedisProbe.URL)
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(PolylockClient.class));
    }

    @Test
    void springDataRedisPropertiesAsPolylockUrls() {
        org.springframework.mock.env.MockEnvironment env = new org.springframework.mock.env.MockEnvironment();
        assertThat(SpringDataRedisUrl.of(env)).isNull();
        env.setProperty("spring.data.redis.host", "h");
        env.setProperty("spring.data.redis.password", "p w");
        env.setProperty("spring.data.redis.database", "2");
        assertThat(SpringDataRedisUrl.of(env)).isEqualTo("redis://:p+w@h:6379/2");
        env.setProperty("spring.data.redis.ssl.enabled", "true");
        env.setProperty("spring.data.redis.sentinel.master", "mymaster");
        env.setProperty("spring.data.redis.sentinel.nodes", "s1:26379, s2:26379");
        assertThat(SpringDataRedisUrl.of(env)).isEqualTo("rediss+sentinel://:p+w@s1:26379,s2:26379/mymaster/2");
        org.springframework.mock.env.MockEnvironment cluster = new org.springframework.mock.env.MockEnvironment();
        cluster.setProperty("spring.data.redis.cluster.nodes", "c1:7000,c2:7001");
        cluster.setProperty("spring.data.redis.username", "u");
        cluster.setProperty("spring.data.redis.password", "pw");
        assertThat(SpringDataRedisUrl.of(cluster)).isEqualTo("redis+cluster://u:pw@c1:7000,c2:7001");
    }

    @Test
    void springsTimeoutIsPolylocksOneJavaTimeoutError() {
        LockNotAcquiredException e = new LockNotAcquiredException("x", "not acquired");
        assertThat(e).isInstanceOf(LockTimeoutException.class).isInstanceOf(PolylockException.class);
        assertThat(e.getCode()).isEqualTo(PolylockException.Code.TIMEOUT);
        assertThat(e.getNumber()).isEqualTo(3);
    }
}
