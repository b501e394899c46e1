package io.nvmeof.initiator;

import java.util.List;
import java.util.UUID;

/**
 * What Reservation Report said of a namespace: the generation (counts registration changes), the reservation type (0:
 * none; see {@link io.nvmeof.protocol.reservation.Reservations}), whether it persists through power loss, and the
 * registered hosts.
 *
 * @param registrantCount how many hosts are registered (more than {@code registrants} only if the target has more than
 *                        one report can carry)
 */
public record ReservationReport(long generation, int type, boolean persistThroughPowerLoss, int registrantCount,
        List<Registrant> registrants) {

    /** A registered host: its host identifier, its key, and whether it holds the reservation. */
    public record Registrant(UUID hostId, long key, boolean holdsReservation, int cntlid) {
    }

    /** The registrant with this host ID, or null. */
    public Registrant registrant(UUID hostId) {
        return registrants.stream().filter(r -> r.hostId().equals(hostId)).findFirst().orElse(null);
    }
}
