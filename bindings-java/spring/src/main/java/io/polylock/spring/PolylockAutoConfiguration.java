package io.polylock.spring;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * A {@link PolylockClient} from {@code polylock.url} (unless the application defines its own),
 * closed with the context, and the {@link DistributedLockedAspect} that serves {@link
 * DistributedLocked}. {@code polylock.enabled=false} turns both off.
 */
@AutoConfiguration
@ConditionalOnClass({PolylockClient.class, org.aspectj.lang.annotation.Aspect.class})
@ConditionalOnProperty(prefix = "polylock", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(PolylockProperties.class)
public class PolylockAutoConfiguration {

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public PolylockClient polylockClient(PolylockProperties properties) {
        String url = properties.getUrl();
        if (url == null || url.isBlank()) {
            throw new IllegalStateException(
                    "polylock.url is not set: give the lock server (e.g. redis://127.0.0.1:6379), "
                            + "define a PolylockClient bean, or set polylock.enabled=false");
        }
        return Polylock.connect(url, options(properties));
    }

    /** The client options of {@code polylock.*} (shared by the named backends). */
    static Polylock.Options options(PolylockProperties properties) {
        Polylock.Options options = new Polylock.Options();
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
    public PolylockBackends polylockBackends(PolylockProperties properties) {
        return new PolylockBackends(properties.getBackends(), options(properties));
    }

    @Bean
    @ConditionalOnMissingBean
    public DistributedLockedAspect distributedLockedAspect(
            PolylockClient client, PolylockBackends backends, PolylockProperties properties,
            BeanFactory beanFactory) {
        return new DistributedLockedAspect(client, backends, beanFactory, properties.getAspectOrder());
    }
}
