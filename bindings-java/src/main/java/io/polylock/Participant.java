package io.polylock;

import java.util.Objects;

/**
 * A candidate of a leader election as {@link DistributedLeaderLatch} reports it, shaped like
 * Curator's {@code Participant}: its id and whether it leads.
 */
public final class Participant {
    private final String id;
    private final boolean leader;

    Participant(String id, boolean leader) {
        this.id = id;
        this.leader = leader;
    }

    /** The id the candidate campaigns with ("" for Curator's "no leader"). */
    public String getId() {
        return id;
    }

    /** Whether it leads. */
    public boolean isLeader() {
        return leader;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Participant && ((Participant) o).id.equals(id) && ((Participant) o).leader == leader;
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, leader);
    }

    @Override
    public String toString() {
        return "Participant{id='" + id + "', isLeader=" + leader + "}";
    }
}
