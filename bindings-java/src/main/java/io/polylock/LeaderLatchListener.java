package io.polylock;

/**
 * Told when a {@link DistributedLeaderLatch} becomes the leader and when it stops leading (its
 * session expired, its lease was not renewed, its key was deleted, or it was closed), as Curator's
 * {@code LeaderLatchListener}. Called on the latch's own thread; keep it short.
 */
public interface LeaderLatchListener {
    /** This latch leads now (its term: {@link DistributedLeaderLatch#getTerm()}). */
    void isLeader();

    /** This latch no longer leads: stop what only the leader may do, at once. */
    void notLeader();
}
