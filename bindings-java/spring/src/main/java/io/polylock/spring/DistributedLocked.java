package io.polylock.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.concurrent.TimeUnit;

/**
 * Runs the annotated method while holding a polylock distributed lock, taken by {@link
 * DistributedLockedAspect} on the {@link io.polylock.PolylockClient} bean of the context.
 *
 * <pre>{@code
 * @DistributedLocked(key = "'order:' + #orderId", waitTime = 5, leaseTime = -1, timeUnit = TimeUnit.SECONDS)
 * public void ship(String orderId) { ... }
 * }</pre>
 *
 * <p>The lock is held by the calling thread and released when the method returns or throws, so
 * the method must do its work synchronously (a returned {@code CompletableFuture} or reactive type
 * would run unprotected). As with every Spring proxy, a call from the same object ({@code
 * this.ship(...)}) bypasses the lock.
 *
 * <p>If the lock is lost while the method runs (its lease expired, it was force-unlocked, the
 * client closed), the call throws {@link io.polylock.LockLostException} after the method returned
 * (its return value is dropped); if the method threw, its exception is thrown with the loss
 * attached as a suppressed exception.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface DistributedLocked {
    /**
     * The lock's name: a SpEL expression over the method's parameters by name ({@code #orderId};
     * the code must be compiled with {@code -parameters}) or by position ({@code #p0}, {@code
     * #a0}), with {@code #root.method}, {@code #root.args}, {@code #root.target} and bean
     * references ({@code @beanName}). A literal name needs quotes: {@code "'nightly-report'"}. It
     * must evaluate to a non-empty value (its {@code toString()} is the name).
     */
    String key();

    /**
     * How long to wait for the lock, in {@link #timeUnit()}: {@code -1} (the default) waits
     * forever, {@code 0} makes one attempt. When the wait runs out the call throws {@link
     * LockNotAcquiredException} (or is skipped, with {@link #skipIfLocked()}).
     */
    long waitTime() default -1;

    /**
     * The lease, in {@link #timeUnit()}: {@code -1} (the default) keeps the lock with the
     * client's watchdog while the method runs ({@code polylock.watchdog-timeout}); a positive
     * lease expires after that long even if the method is still running (then the call throws
     * {@link io.polylock.LockLostException}).
     */
    long leaseTime() default -1;

    /** The unit of {@link #waitTime()} and {@link #leaseTime()}. */
    TimeUnit timeUnit() default TimeUnit.MILLISECONDS;

    /**
     * ShedLock's behaviour: if the lock is held elsewhere, do not run the method and return
     * {@code null} ({@code Optional.empty()} for an {@code Optional}, zero or {@code false} for a
     * primitive). Makes one attempt, or waits {@link #waitTime()} if it is positive.
     */
    boolean skipIfLocked() default false;

    /** A fair lock ({@link io.polylock.PolylockClient#getFairLock}): waiters served in order. */
    boolean fair() default false;

    /**
     * Interrupt the thread running the method the moment the lock is lost (the method sees an
     * {@link InterruptedException} from its next blocking call, or {@link Thread#isInterrupted()}),
     * so that it can stop early; the call then throws {@link io.polylock.LockLostException} as
     * usual. The interrupt is not left behind on the thread when the call ends.
     */
    boolean interruptOnLost() default false;

    /**
     * The lock server: empty for the context's {@link io.polylock.PolylockClient} ({@code
     * polylock.url}), or the name of one of {@code polylock.backends.<name>=<url>} (a ZooKeeper
     * ensemble beside the Redis, say: {@code backend = "zk"}, whose keys are znode paths).
     */
    String backend() default "";
}
