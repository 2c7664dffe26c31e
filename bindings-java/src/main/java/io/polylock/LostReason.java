package io.polylock;

/**
 * Why a hold was lost ({@link LockLostException#getReason()}): core's stable reasons, with the
 * numbers C's {@code POLYLOCK_LOST_*} carry.
 */
public enum LostReason {
    /** A fixed lease (no watchdog) ran out before the release. */
    EXPIRED(1),
    /** The hold's entry disappeared from the server: deleted, force-unlocked, its connection killed. */
    DELETED(2),
    /** The watchdog could not renew the lease before it ran out (the server was unreachable). */
    RENEWAL_FAILED(3),
    /** The session that held it expired (ZooKeeper, etcd). */
    SESSION_EXPIRED(4),
    /** The client was closed while it was held. */
    CLIENT_CLOSED(5);

    private final int number;

    LostReason(int number) {
        this.number = number;
    }

    /** The stable number of this reason. */
    public int number() {
        return number;
    }

    /** The reason with this number; {@code null} for 0 (not lost) or an unknown one. */
    public static LostReason of(int number) {
        for (LostReason r : values()) {
            if (r.number == number) {
                return r;
            }
        }
        return null;
    }
}
