package io.polylock.spring;

import io.polylock.DistributedLock;
import io.polylock.LockLostException;
import io.polylock.PolylockClient;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import org.aspectj.lang.ProceedingJoinPoint;
import org.aspectj.lang.annotation.Around;
import org.aspectj.lang.annotation.Aspect;
import org.aspectj.lang.reflect.MethodSignature;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.Ordered;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionParser;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * Runs {@link DistributedLocked} methods under their lock: evaluates the key, takes the lock
 * ({@code lockInterruptibly} or {@code tryLock(wait, lease)}), runs the method and releases the
 * lock in {@code finally}. See {@link DistributedLocked} for what each outcome throws.
 */
@Aspect
public class DistributedLockedAspect implements Ordered {
    private final PolylockClient client;
    private final PolylockBackends backends;
    private final BeanFactory beanFactory;
    private final int order;
    private final ExpressionParser parser = new SpelExpressionParser();
    private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();
    private final Map<String, Expression> expressions = new ConcurrentHashMap<>();

    public DistributedLockedAspect(PolylockClient client, BeanFactory beanFactory, int order) {
        this(client, null, beanFactory, order);
    }

    public DistributedLockedAspect(
            PolylockClient client, PolylockBackends backends, BeanFactory beanFactory, int order) {
        this.client = Objects.requireNonNull(client, "client");
        this.backends = backends;
        this.beanFactory = beanFactory;
        this.order = order;
    }

    @Override
    public int getOrder() {
        return order;
    }

    /** The root object of key expressions: {@code #root.method}, {@code #root.args}, {@code #root.target}. */
    public record KeyRoot(Method method, Object[] args, Object target) {}

    @Around(value = "@annotation(locked)", argNames = "pjp,locked")
    public Object around(ProceedingJoinPoint pjp, DistributedLocked locked) throws Throwable {
        Method method = ((MethodSignature) pjp.getSignature()).getMethod();
        String name = evaluateKey(locked.key(), method, pjp.getArgs(), pjp.getTarget());
        PolylockClient on = client;
        if (!locked.backend().isEmpty()) {
            if (backends == null) {
                throw new IllegalArgumentException("@DistributedLocked(backend = \"" + locked.backend()
                        + "\") on " + method + ": no polylock.backends are configured");
            }
            on = backends.client(locked.backend());
        }
        DistributedLock lock = locked.fair() ? on.getFairLock(name) : on.getLock(name);
        if (!acquire(lock, locked, name)) {
            if (locked.skipIfLocked()) {
                return skippedResult(method.getReturnType());
            }
            throw new LockNotAcquiredException(name, "lock '" + name + "' was not acquired within "
                    + locked.waitTime() + " " + locked.timeUnit().name().toLowerCase(java.util.Locale.ROOT));
        }
        if (!locked.interruptOnLost()) {
            return runHolding(pjp, lock, name);
        }
        // Interrupt this thread at a loss, but only while the method runs.
        Thread runner = Thread.currentThread();
        Object guard = new Object();
        boolean[] state = {true, false}; // running, interrupted by a loss
        DistributedLock.Listener listener = (l, cause) -> {
            synchronized (guard) {
                if (state[0] && !state[1]) {
                    state[1] = true;
                    runner.interrupt();
                }
            }
        };
        lock.addListener(listener);
        try {
            return runHolding(pjp, lock, name);
        } finally {
            synchronized (guard) {
                state[0] = false;
                if (state[1]) {
                    Thread.interrupted(); // our interrupt, not the caller's: do not leave it set
                }
            }
            lock.removeListener(listener);
        }
    }

    private boolean acquire(DistributedLock lock, DistributedLocked locked, String name) {
        long wait = locked.waitTime();
        long lease = locked.leaseTime();
        try {
            if (locked.skipIfLocked()) {
                // One attempt (ShedLock), or the given wait if positive.
                return lock.tryLock(Math.max(wait, 0), lease, locked.timeUnit());
            }
            if (wait < 0) {
                lock.lockInterruptibly(lease, locked.timeUnit());
                return true;
            }
            return lock.tryLock(wait, lease, locked.timeUnit());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockNotAcquiredException(name, "interrupted while waiting for lock '" + name + "'", e);
        }
    }

    private Object runHolding(ProceedingJoinPoint pjp, DistributedLock lock, String name) throws Throwable {
        Object result;
        try {
            result = pjp.proceed();
        } catch (Throwable failure) {
            try {
                LockLostException lost = release(lock, name);
                if (lost != null) {
                    failure.addSuppressed(lost);
                }
            } catch (RuntimeException releaseFailed) {
                failure.addSuppressed(releaseFailed); // the method's own exception stays the one thrown
            }
            throw failure;
        }
        LockLostException lost = release(lock, name);
        if (lost != null) {
            throw lost;
        }
        return result;
    }

    /** Release the current thread's hold; the loss, if it was lost while the method ran. */
    private static LockLostException release(DistributedLock lock, String name) {
        boolean lostBefore = lock.isLost();
        try {
            lock.unlock();
        } catch (LockLostException e) {
            return e;
        }
        if (lostBefore) {
            return new LockLostException("lock '" + name + "' was lost while the method ran");
        }
        return null;
    }

    private String evaluateKey(String key, Method method, Object[] args, Object target) {
        Expression expression = expressions.computeIfAbsent(key, parser::parseExpression);
        Method specific = target == null ? method : AopUtils.getMostSpecificMethod(method, target.getClass());
        MethodBasedEvaluationContext context =
                new MethodBasedEvaluationContext(new KeyRoot(specific, args, target), specific, args, parameterNames);
        if (beanFactory != null) {
            context.setBeanResolver(new BeanFactoryResolver(beanFactory));
        }
        Object value = expression.getValue(context);
        String name = value == null ? null : value.toString();
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("the key '" + key + "' of @DistributedLocked on " + specific
                    + " evaluated to " + (value == null ? "null" : "an empty name"));
        }
        return name;
    }

    /** What a skipped method returns: empty for the Optionals, zero for primitives, else null. */
    static Object skippedResult(Class<?> type) {
        if (type == Optional.class) {
            return Optional.empty();
        }
        if (type == OptionalInt.class) {
            return OptionalInt.empty();
        }
        if (type == OptionalLong.class) {
            return OptionalLong.empty();
        }
        if (type == OptionalDouble.class) {
            return OptionalDouble.empty();
        }
        if (type == boolean.class) {
            return false;
        }
        if (type == char.class) {
            return '\0';
        }
        if (type == byte.class) {
            return (byte) 0;
        }
        if (type == short.class) {
            return (short) 0;
        }
        if (type == int.class) {
            return 0;
        }
        if (type == long.class) {
            return 0L;
        }
        if (type == float.class) {
            return 0f;
        }
        if (type == double.class) {
            return 0d;
        }
        return null;
    }
}
