package io.polylock.spring;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/** {@code polylock.*}: how the auto-configured {@link io.polylock.PolylockClient} connects. */
@ConfigurationProperties(prefix = "polylock")
public class PolylockProperties {
    /** Whether to configure polylock at all (client and aspect). */
    private boolean enabled = true;
    /**
     * The server: {@code redis://host:6379}, {@code rediss://...}, {@code zk://host:2181}, ... (every
     * form: docs/src/contract.md#urls). Unset: Spring Data Redis's {@code spring.data.redis.*}.
     */
    private String url;
    /** Lease of locks taken without a lease time, renewed every third of it (default 30 s). */
    private Duration watchdogTimeout;
    /** Limit of one connection attempt (default 5 s). */
    private Duration connectTimeout;
    /** Limit of one command's answer (default 5 s). */
    private Duration commandTimeout;
    /** ZooKeeper session timeout (default 10 s). */
    private Duration sessionTimeout;
    /** How long a dead waiter keeps its place in a fair lock's queue (default 5 s). */
    private Duration fairWaitTimeout;
    /** Order of the aspect among other advice; the default runs it outside {@code @Transactional}. */
    private int aspectOrder = 0;
    /** The id this instance campaigns with in {@code @LeaderOnly} elections (default: the
     * application's name, host and process id). */
    private String leaderId;
    /**
     * The service name operators see next to this application's holds ({@code polylock status},
     * {@code top}), with its host, pid and runtime. Unset: {@code spring.application.name}, else
     * {@code POLYLOCK_SERVICE}, else the program's name.
     */
    private String service;
    /**
     * Lock names that get metric series of their own (a {@code name} label), as Redis-style
     * globs ({@code orders:*}); none by default, so the series stay bounded.
     */
    private java.util.List<String> metricNames = new java.util.ArrayList<>();
    /** polylock's Micrometer meters ({@code polylock.metrics.*}). */
    private final Metrics metrics = new Metrics();
    /** More lock servers by name ({@code polylock.backends.zk=zk://...}), for {@code backend = "zk"}. */
    private java.util.Map<String, String> backends = new java.util.LinkedHashMap<>();

    /** Spring Integration's lock registry ({@link PolylockLockRegistry}). */
    private final Integration integration = new Integration();
    /** ShedLock's lock provider ({@link PolylockLockProvider}). */
    private final ShedLock shedlock = new ShedLock();

    /** {@code polylock.integration.*}. */
    public static class Integration {
        /** Prefix of the registry's lock names (a path such as {@code /spring-integration/} on ZooKeeper). */
        private String prefix = "spring-integration:";

        public String getPrefix() {
            return prefix;
        }

        public void setPrefix(String prefix) {
            this.prefix = prefix;
        }
    }

    /** {@code polylock.metrics.*}. */
    public static class Metrics {
        /** Whether to register polylock's meters when Micrometer is there. */
        private boolean enabled = true;
        /** How old a snapshot of the native counts the meters may read (one per scrape, at most per this). */
        private Duration maxAge = Duration.ofSeconds(1);

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Duration getMaxAge() {
            return maxAge;
        }

        public void setMaxAge(Duration maxAge) {
            this.maxAge = maxAge;
        }
    }

    /** {@code polylock.shedlock.*}. */
    public static class ShedLock {
        /** Prefix of the provider's lock names; empty: the task's name, as ShedLock's table rows are named. */
        private String prefix = "";

        public String getPrefix() {
            return prefix;
        }

        public void setPrefix(String prefix) {
            this.prefix = prefix;
        }
    }

    public Metrics getMetrics() {
        return metrics;
    }

    public String getService() {
        return service;
    }

    public void setService(String service) {
        this.service = service;
    }

    public java.util.List<String> getMetricNames() {
        return metricNames;
    }

    public void setMetricNames(java.util.List<String> metricNames) {
        this.metricNames = metricNames;
    }

    public Integration getIntegration() {
        return integration;
    }

    public ShedLock getShedlock() {
        return shedlock;
    }

    public java.util.Map<String, String> getBackends() {
        return backends;
    }

    public void setBackends(java.util.Map<String, String> backends) {
        this.backends = backends;
    }

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public String getUrl() {
        return url;
    }

    public void setUrl(String url) {
        this.url = url;
    }

    public Duration getWatchdogTimeout() {
        return watchdogTimeout;
    }

    public void setWatchdogTimeout(Duration watchdogTimeout) {
        this.watchdogTimeout = watchdogTimeout;
    }

    public Duration getConnectTimeout() {
        return connectTimeout;
    }

    public void setConnectTimeout(Duration connectTimeout) {
        this.connectTimeout = connectTimeout;
    }

    public Duration getCommandTimeout() {
        return commandTimeout;
    }

    public void setCommandTimeout(Duration commandTimeout) {
        this.commandTimeout = commandTimeout;
    }

    public Duration getSessionTimeout() {
        return sessionTimeout;
    }

    public void setSessionTimeout(Duration sessionTimeout) {
        this.sessionTimeout = sessionTimeout;
    }

    public Duration getFairWaitTimeout() {
        return fairWaitTimeout;
    }

    public void setFairWaitTimeout(Duration fairWaitTimeout) {
        this.fairWaitTimeout = fairWaitTimeout;
    }

    public int getAspectOrder() {
        return aspectOrder;
    }

    public void setAspectOrder(int aspectOrder) {
        this.aspectOrder = aspectOrder;
    }

    public String getLeaderId() {
        return leaderId;
    }

    public void setLeaderId(String leaderId) {
        this.leaderId = leaderId;
    }
}
