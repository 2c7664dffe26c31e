package io.polylock.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.polylock.DistributedLock;
import io.polylock.PolylockClient;
import io.polylock.metrics.PolylockMetrics;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.export.prometheus.PrometheusMetricsExportAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * polylock's meters in an application with Actuator's metrics and the Prometheus registry (what
 * {@code /actuator/prometheus} serves), on the real Redis.
 */
class MetricsTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(PolylockAutoConfiguration.class, AopAutoConfiguration.class,
                    MetricsAutoConfiguration.class, CompositeMeterRegistryAutoConfiguration.class,
                    PrometheusMetricsExportAutoConfiguration.class))
            .withPropertyValues("polylock.url=" + RedisProbe.URL);

    /** The value of the series that starts with {@code series} in the scrape. */
    private static double value(String scrape, String series) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(scrape);
        assertThat(m.find()).as(series + " in\n" + scrape).isTrue();
        return Double.parseDouble(m.group(1));
    }

    @Test
    void thePrometheusScrapeHasPolylocksSeriesOnceTheApplicationLocks() {
        runner.withPropertyValues("polylock.metric-names=spring-test:metrics:*", "polylock.metrics.max-age=0s")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(PolylockMetrics.class)
                            .hasSingleBean(PrometheusMeterRegistry.class);
                    PrometheusMeterRegistry registry = context.getBean(PrometheusMeterRegistry.class);
                    String acquired = "polylock_acquire_wait_seconds_count{backend=\"redis\",kind=\"lock\",outcome=\"acquired\"}";
                    String before = registry.scrape();
                    double count = before.contains(acquired) ? value(before, acquired) : 0;
                    String name = "spring-test:metrics:" + UUID.randomUUID();
                    DistributedLock lock = context.getBean(PolylockClient.class).getLock(name);
                    lock.lock();
                    long token;
                    try {
                        token = lock.getFencingToken();
                        registry.scrape(); // registers the name's series, first seen now
                        String during = registry.scrape();
                        assertThat(value(during, acquired)).isEqualTo(count + 1);
                        assertThat(value(during, "polylock_name_holds{backend=\"redis\",kind=\"lock\",name=\"" + name + "\"}"))
                                .isEqualTo(1.0);
                    } finally {
                        lock.unlock();
                    }
                    String after = registry.scrape();
                    assertThat(value(after, "polylock_name_fencing_token{backend=\"redis\",kind=\"lock\",name=\"" + name + "\"}"))
                            .isEqualTo((double) token);
                    assertThat(value(after, "polylock_name_holds{backend=\"redis\",kind=\"lock\",name=\"" + name + "\"}"))
                            .isEqualTo(0.0);
                    assertThat(after).contains("# TYPE polylock_losses_total counter")
                            .contains("polylock_hold_seconds_sum{backend=\"redis\",kind=\"lock\"}");
                });
    }

    @Test
    void withoutMicrometerOrWhenDisabledThereIsNoBinder() {
        runner.withClassLoader(new FilteredClassLoader(MeterBinder.class)).run(context ->
                assertThat(context).hasNotFailed().hasSingleBean(PolylockClient.class)
                        .doesNotHaveBean(PolylockMetrics.class));
        runner.withPropertyValues("polylock.metrics.enabled=false").run(context ->
                assertThat(context).hasNotFailed().doesNotHaveBean(PolylockMetrics.class));
    }

    @Test
    void theServiceIsTheApplicationsName() {
        String app = "spring-metrics-test-" + UUID.randomUUID();
        runner.withPropertyValues("spring.application.name=" + app).run(context -> {
            assertThat(context).hasNotFailed();
            PolylockClient client = context.getBean(PolylockClient.class);
            String identity = RedisProbe.get("polylock_client:" + client.getId());
            assertThat(identity).contains("\"service\":\"" + app + "\"").contains("\"runtime\":\"java ");
        });
        runner.withPropertyValues("spring.application.name=ignored", "polylock.service=billing").run(context -> {
            PolylockClient client = context.getBean(PolylockClient.class);
            assertThat(RedisProbe.get("polylock_client:" + client.getId())).contains("\"service\":\"billing\"");
        });
    }
}
