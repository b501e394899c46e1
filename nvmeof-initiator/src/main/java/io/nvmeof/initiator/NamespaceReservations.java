package io.nvmeof.initiator;

import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.reservation.ReservationKeys;
import io.nvmeof.protocol.reservation.ReservationStatusExtended;
import io.nvmeof.protocol.reservation.Reservations;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The reservation commands of one namespace (NVMe Base 2.0 section 8.19) as this host sends them: register a key,
 * acquire, preempt, release or clear a reservation, and read the report. A command the target refuses completes
 * exceptionally with {@link NvmeStatusException} (Reservation Conflict, status 83h, when a key does not match or
 * another host holds the reservation). Registrations belong to the host ID of {@link ConnectOptions}.
 */
public final class NamespaceReservations {
    /** A report of up to 63 registrants: one page. */
    private static final int FIRST_REPORT_BYTES = 4096;

    private final NamespaceHandle ns;

    NamespaceReservations(NamespaceHandle ns) {
        this.ns = ns;
    }

    /** Registers this host with {@code key}; {@code cptpl} 3 turns Persist Through Power Loss on, 2 off, 0 leaves it. */
    public CompletableFuture<Void> register(long key, int cptpl) {
        return registerCommand(Reservations.REGISTER, false, cptpl, 0, key);
    }

    public CompletableFuture<Void> unregister(long currentKey) {
        return registerCommand(Reservations.UNREGISTER, false, 0, currentKey, 0);
    }

    /** Replaces this host's key; with {@code ignoreExistingKey}, whatever its current key is. */
    public CompletableFuture<Void> replace(long currentKey, long newKey, boolean ignoreExistingKey) {
        return registerCommand(Reservations.REPLACE, ignoreExistingKey, 0, currentKey, newKey);
    }

    private CompletableFuture<Void> registerCommand(int action, boolean ignoreKey, int cptpl, long current, long next) {
        int cdw10 = action | (ignoreKey ? 0x8 : 0) | cptpl << 30;
        return ns.submitReservation("Reservation Register", Opcodes.IO_RESERVATION_REGISTER, cdw10, 0,
                keys(current, next), true);
    }

    /** Acquires a reservation of {@code type} (1..6) with this host's key. */
    public CompletableFuture<Void> acquire(long currentKey, int type) {
        return acquireCommand(Reservations.ACQUIRE, type, currentKey, 0);
    }

    /**
     * Preempts the registrants with {@code preemptKey} (the holder's: takes its reservation as {@code type}), with
     * {@code abort} as Preempt and Abort.
     */
    public CompletableFuture<Void> preempt(long currentKey, long preemptKey, int type, boolean abort) {
        return acquireCommand(abort ? Reservations.PREEMPT_AND_ABORT : Reservations.PREEMPT, type, currentKey,
                preemptKey);
    }

    private CompletableFuture<Void> acquireCommand(int action, int type, long current, long preempt) {
        return ns.submitReservation("Reservation Acquire", Opcodes.IO_RESERVATION_ACQUIRE, action | type << 8, 0,
                keys(current, preempt), true);
    }

    /** Releases the reservation this host holds, which must be of {@code type}. */
    public CompletableFuture<Void> release(long currentKey, int type) {
        return releaseCommand(Reservations.RELEASE, type, currentKey);
    }

    /** Releases the reservation and unregisters every host. */
    public CompletableFuture<Void> clear(long currentKey) {
        return releaseCommand(Reservations.CLEAR, 0, currentKey);
    }

    private CompletableFuture<Void> releaseCommand(int action, int type, long current) {
        ByteBuffer data = ByteBuffer.allocateDirect(Reservations.ONE_KEY_LENGTH);
        new ReservationKeys().<ReservationKeys>wrap(new UnsafeBuffer(data), 0).currentKey(current);
        return ns.submitReservation("Reservation Release", Opcodes.IO_RESERVATION_RELEASE, action | type << 8, 0, data,
                true);
    }

    /** The namespace's reservation status (the extended data structure: fabrics hosts have 128-bit host IDs). */
    public CompletableFuture<ReservationReport> report() {
        return report(FIRST_REPORT_BYTES).thenCompose(first -> {
            int needed = ReservationStatusExtended.entryOffset(first.registrantCount());
            return needed <= FIRST_REPORT_BYTES ? CompletableFuture.completedFuture(first) : report(needed);
        });
    }

    private CompletableFuture<ReservationReport> report(int bytes) {
        ByteBuffer data = ByteBuffer.allocateDirect(bytes);
        int numd = bytes / 4 - 1;
        return ns.submitReservation("Reservation Report", Opcodes.IO_RESERVATION_REPORT, numd, 1, data, false)
                .thenApply(v -> parse(data, bytes));
    }

    static ReservationReport parse(ByteBuffer data, int bytes) {
        ReservationStatusExtended r = new ReservationStatusExtended().wrap(new UnsafeBuffer(data), 0);
        int count = r.registrants();
        int fits = Math.min(count, (bytes - ReservationStatusExtended.HEADER_LENGTH) / ReservationStatusExtended.ENTRY_LENGTH);
        List<ReservationReport.Registrant> list = new ArrayList<>(fits);
        for (int i = 0; i < fits; i++) {
            ByteBuffer id = ByteBuffer.wrap(r.hostId(i));
            list.add(new ReservationReport.Registrant(new UUID(id.getLong(0), id.getLong(8)), r.key(i), r.holds(i),
                    r.cntlid(i)));
        }
        return new ReservationReport(r.generation(), r.type(), r.persistThroughPowerLoss(), count, List.copyOf(list));
    }

    private static ByteBuffer keys(long first, long second) {
        ByteBuffer data = ByteBuffer.allocateDirect(Reservations.TWO_KEYS_LENGTH);
        new ReservationKeys().<ReservationKeys>wrap(new UnsafeBuffer(data), 0).currentKey(first).newKey(second);
        return data;
    }
}
