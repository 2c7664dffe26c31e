package io.polylock;

/**
 * A thread that holds the read lock of a {@link DistributedReadWriteLock} asked for its write
 * lock. That can never be granted (every other reader could ask the same, and none would let go),
 * so polylock says so at once instead of waiting forever as Redisson and Curator do. The read
 * lock stays held. Release it first, or take the write lock first and then the read lock (a
 * downgrade). Code {@link PolylockException.Code#UPGRADE_NOT_SUPPORTED}.
 */
public class UpgradeNotSupportedException extends PolylockException {
    private static final long serialVersionUID = 1L;

    public UpgradeNotSupportedException(String message) {
        super(Code.UPGRADE_NOT_SUPPORTED, message);
    }
}
