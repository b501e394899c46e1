package io.nvmeof.tgt.core;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.nvmeof.protocol.fabrics.Nqn;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which host NQN owns a Host ID: the first host that proved who it is with that Host ID (DH-HMAC-CHAP completed on
 * one of its queues, or a TLS connection with its own PSK). Reservations, and the target's memory of a host's earlier
 * associations, follow the Host ID; a host that proved nothing must not borrow the ID of one that did (issue 51: a host
 * with no secret read an authenticated host's Host ID from Reservation Report, connected with it and wrote through its
 * reservation). A Connect naming an owned Host ID with another host NQN that will not prove itself is refused, and the
 * associations that used it without proving themselves before its owner did end. Hosts that all prove themselves may
 * share one (several NQNs of one machine), as may hosts that never authenticate, as nvmet and SPDK allow.
 *
 * <p>Kept in the state directory ({@code host-ids.json}, 0600), so a restart does not hand an owned ID to whoever
 * connects first. A host's ownership goes with it when the administrator removes the host.
 */
public final class HostIdentities {
    private static final Logger LOG = LoggerFactory.getLogger(HostIdentities.class);
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final Map<UUID, String> owners = new ConcurrentHashMap<>();
    private volatile Path file;

    /** Keeps the owners in {@code file} from now on, taking back what it holds. */
    public synchronized void persistIn(Path file) throws IOException {
        if (Files.exists(file)) {
            Map<String, String> saved;
            try {
                saved = JSON.readValue(file.toFile(), new TypeReference<TreeMap<String, String>>() { });
            } catch (IOException e) {
                throw new IOException("host identities " + file + " cannot be read: " + e.getMessage()
                        + "; repair or remove it", e);
            }
            for (Map.Entry<String, String> e : saved.entrySet()) {
                String why = e.getValue() == null ? "no host NQN"
                        : e.getValue().length() > Nqn.MAX_LENGTH ? "its host NQN is longer than " + Nqn.MAX_LENGTH + " bytes"
                        : null;
                UUID id;
                try {
                    id = UUID.fromString(e.getKey());
                } catch (IllegalArgumentException bad) {
                    throw new IOException("host identities " + file + ": \"" + e.getKey() + "\" is not a Host ID");
                }
                if (why != null) {
                    throw new IOException("host identities " + file + ": Host ID " + id + ": " + why);
                }
                owners.put(id, e.getValue());
            }
        }
        this.file = file;
    }

    /** The host NQN that owns {@code hostId}, or null when no host proved itself with it. */
    public String owner(UUID hostId) {
        return owners.get(hostId);
    }

    /**
     * {@code hostNqn} proved who it is with {@code hostId}: it owns the ID unless another host did first. Returns
     * whether it owns it now (false: another host owns it, and this one should not have been let in).
     */
    public boolean proven(UUID hostId, String hostNqn) {
        if (hostId.getMostSignificantBits() == 0 && hostId.getLeastSignificantBits() == 0) {
            return true; // the nil Host ID names no host (hosts that send it share it): nobody owns it
        }
        String before = owners.putIfAbsent(hostId, hostNqn);
        if (before == null) {
            save();
            LOG.info("Host ID {} belongs to host {}, which authenticated with it", hostId, Nqn.display(hostNqn));
            return true;
        }
        return before.equals(hostNqn);
    }

    /** The administrator removed {@code hostNqn}: the Host IDs it owned are free again. */
    public void forget(String hostNqn) {
        if (owners.values().removeIf(hostNqn::equals)) {
            save();
        }
    }

    private synchronized void save() {
        Path f = file;
        if (f == null) {
            return;
        }
        Map<String, String> out = new TreeMap<>();
        owners.forEach((id, nqn) -> out.put(id.toString(), nqn));
        try {
            Files.createDirectories(f.getParent());
            ReservationStore.writeAtomically(f, f.resolveSibling(f.getFileName() + ".tmp"), JSON.writeValueAsBytes(out));
        } catch (IOException e) {
            LOG.error("host identities could not be saved to {}: {}; they hold until the target restarts", f,
                    e.toString());
        }
    }
}
