package io.polylock.spring;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.metrics.PolylockMetrics;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * A {@link PolylockClient} from {@code polylock.url} (or, without it, from Spring Data Redis's
 * {@code spring.data.redis.*}; unless the application defines its own client), closed with the
 * context; the {@link DistributedLockedAspect} that serves {@link DistributedLocked}; and, when
 * their libraries are on the class path and the application has none of its own, Spring
 * Integration's {@code LockRegistry} ({@link PolylockLockRegistry}) and ShedLock's {@code
 * LockProvider} ({@link PolylockLockProvider}) on that client; and the {@link LeaderOnlyAspect}
 * that serves {@link LeaderOnly}; and, when Micrometer is on the class path, polylock's meters
 * ({@link PolylockMetrics}, a {@code MeterBinder} that Spring Boot binds to every registry: {@code
 * /actuator/prometheus} has them with the Prometheus registry; {@code
 * polylock.metrics.enabled=false} leaves them out). {@code polylock.enabled=false} turns it all
 * off.
 */
@AutoConfiguration
@ConditionalOnClass({PolylockClient.class, org.aspectj.lang.annotation.Aspect.class})
@ConditionalOnProperty(prefix = "polylock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(PolylockProperties.class)
public class PolylockAutoConfiguration {

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public PolylockClient polylockClient(PolylockProperties properties, Environment environment) {
        String url = properties.getUrl();
        if (url == null || url.isBlank()) {
            url = SpringDataRedisUrl.of(environment);
        }
        if (url == null || url.isBlank()) {
            throw new IllegalStateException(
                    "polylock.url is not set (nor spring.data.redis.*): give the lock server (e.g. "
                            + "redis://127.0.0.1:6379; every form: docs/src/contract.md#urls), define a "
                            + "PolylockClient bean, or set polylock.enabled=false");
        }
        return Polylock.connect(url, options(properties, environment));
    }

    /**
     * The client options of {@code polylock.*} (shared by the named backends); the service is
     * {@code polylock.service}, else {@code spring.application.name}.
     */
    static Polylock.Options options(PolylockProperties properties, Environment environment) {
        Polylock.Options options = new Polylock.Options();
        String service = properties.getService();
        if (service == null || service.isBlank()) {
            service = environment.getProperty("spring.application.name");
        }
        if (service != null && !service.isBlank()) {
            options.service(service);
        }
        if (!properties.getMetricNames().isEmpty()) {
            options.metricNames(properties.getMetricNames());
        }
        if (properties.getWatchdogTimeout() != null) {
            options.watchdogTimeout(properties.getWatchdogTimeout());
        }
        if (properties.getConnectTimeout() != null) {
            options.connectTimeout(properties.getConnectTimeout());
        }
        if (properties.getCommandTimeout() != null) {
            options.commandTimeout(properties.getCommandTimeout());
        }
        if (properties.getSessionTimeout() != null) {
            options.sessionTimeout(properties.getSessionTimeout());
        }
        if (properties.getFairWaitTimeout() != null) {
            options.fairWaitTimeout(properties.getFairWaitTimeout());
        }
        return options;
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public PolylockBackends polylockBackends(PolylockProperties properties, Environment environment) {
        return new PolylockBackends(properties.getBackends(), options(properties, environment));
    }

    /** Spring Integration's lock registry on polylock, when Spring Integration is there. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.integration.support.locks.LockRegistry")
    static class IntegrationConfiguration {
        @Bean
        @ConditionalOnMissingBean(type = "org.springframework.integration.support.locks.LockRegistry")
        PolylockLockRegistry polylockLockRegistry(PolylockClient client, PolylockProperties properties) {
            return new PolylockLockRegistry(client, properties.getIntegration().getPrefix());
        }
    }

    /**
     * polylock's meters, when Micrometer is there: Spring Boot binds every {@code MeterBinder}
     * bean to its registries (the Prometheus one serves them at {@code /actuator/prometheus}).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.core.instrument.binder.MeterBinder")
    @ConditionalOnProperty(prefix = "polylock.metrics", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class MetricsConfiguration {
        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean
        PolylockMetrics polylockMetrics(PolylockProperties properties) {
            return new PolylockMetrics(java.util.Collections.emptyList(), properties.getMetrics().getMaxAge());
        }
    }

    /** ShedLock's lock provider on polylock, when ShedLock is there. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "net.javacrumbs.shedlock.core.LockProvider")
    static class ShedLockConfiguration {
        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean(type = "net.javacrumbs.shedlock.core.LockProvider")
        PolylockLockProvider polylockLockProvider(PolylockClient client, PolylockProperties properties) {
            return new PolylockLockProvider(client, properties.getShedlock().getPrefix());
        }
    }

    @Bean
    @ConditionalOnMissingBean
    public DistributedLockedAspect distributedLockedAspect(
            PolylockClient client, PolylockBackends backends, PolylockProperties properties,
            BeanFactory beanFactory) {
        return new DistributedLockedAspect(client, backends, beanFactory, properties.getAspectOrder());
    }

    /** The aspect of {@link LeaderOnly}: this instance campaigns as {@code polylock.leader-id}, else
     * {@code spring.application.name} with the host and process id. */
    @Bean
    @ConditionalOnMissingBean
    public LeaderOnlyAspect leaderOnlyAspect(
            PolylockClient client, PolylockBackends backends, PolylockProperties properties, Environment environment) {
        String id = properties.getLeaderId();
        if (id == null || id.isBlank()) {
            String app = environment.getProperty("spring.application.name", "application");
            String host;
            try {
                host = java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.io.IOException e) {
                host = "host";
            }
            id = app + "@" + host + "-" + ProcessHandle.current().pid();
        }
        return new LeaderOnlyAspect(client, backends, id, properties.getAspectOrder());
    }
}
