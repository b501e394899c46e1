package io.nvmeof.tgt.core;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.nvmeof.protocol.reservation.Reservations;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Where namespaces' reservations persist through a restart while Persist Through Power Loss is on: one small JSON file
 * per namespace in a directory of the target's state directory, named by the subsystem and the namespace's NGUID,
 * written whole and atomically (a temporary file, fsync, rename, fsync of the directory), owner only (0600). A file is
 * taken back only by a namespace of the same subsystem with the same NGUID and UUID: the same volume.
 *
 * <p>Taking a file back fails closed: a file that is not exactly what this class writes (a field missing, unknown, of
 * another type or out of its range; another volume's identity under this volume's name; a reservation type that does
 * not exist; a holder that is not registered, or one where the type has none; a host twice) is refused with what is
 * wrong and the file's name, and the namespace then refuses every command ({@link NamespaceReservations#refuseAll})
 * until an administrator repairs or removes the file. Starting from a guess would let a host the saved reservation
 * fences write again.
 */
public final class ReservationStore {
    private static final ObjectMapper JSON = com.fasterxml.jackson.databind.json.JsonMapper.builder()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .disable(com.fasterxml.jackson.databind.MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .build();

    /** The file's document: the namespace's identity, then its state; keys in hex (they are unsigned 64-bit). */
    record Document(String subsystem, long nsid, String nguid, String uuid, long generation, int type, String holder,
            List<SavedRegistrant> registrants) {
    }

    record SavedRegistrant(String hostId, String key) {
    }

    private final Path dir;

    public ReservationStore(Path dir) {
        this.dir = dir;
    }

    public Path directory() {
        return dir;
    }

    /** The store of one namespace of {@code subsystemNqn}. */
    public NamespaceReservations.Store forNamespace(String subsystemNqn, Namespace ns) {
        String nguid = HexFormat.of().formatHex(ns.nguid());
        Path file = dir.resolve(digest(subsystemNqn) + "-" + nguid + ".json");
        return new NamespaceReservations.Store() {
            @Override
            public NamespaceReservations.State load() throws IOException {
                if (!Files.exists(file)) {
                    return null;
                }
                Document d;
                try {
                    d = JSON.readValue(file.toFile(), Document.class);
                } catch (IOException e) {
                    throw new IOException("reservation state " + file + " cannot be read: " + e.getMessage(), e);
                }
                try {
                    return checked(d, subsystemNqn, nguid, ns.uuid());
                } catch (IllegalArgumentException e) {
                    throw new IOException("reservation state " + file + " is not valid: " + e.getMessage(), e);
                }
            }

            @Override
            public void save(NamespaceReservations.State s) throws IOException {
                List<SavedRegistrant> regs = new ArrayList<>();
                s.registrants().forEach(r -> regs.add(new SavedRegistrant(r.host().toString(),
                        Long.toHexString(r.key()))));
                Document d = new Document(subsystemNqn, ns.nsid(), nguid, ns.uuid().toString(), s.generation(),
                        s.type(), s.holder() != null ? s.holder().toString() : null, regs);
                writeAtomically(file, JSON.writeValueAsBytes(d));
            }

            @Override
            public void delete() throws IOException {
                if (Files.deleteIfExists(file)) {
                    syncDirectory();
                }
            }
        };
    }

    /**
     * The state {@code d} describes, once every field and every rule between them holds; else an
     * IllegalArgumentException saying which does not.
     */
    static NamespaceReservations.State checked(Document d, String subsystemNqn, String nguid, UUID uuid) {
        // The file is named by the subsystem's digest and the NGUID; the document must name the same volume.
        if (!subsystemNqn.equals(d.subsystem())) {
            throw new IllegalArgumentException("it is of subsystem " + quoted(d.subsystem()) + ", not " + subsystemNqn);
        }
        if (!nguid.equals(d.nguid())) {
            throw new IllegalArgumentException("it is of NGUID " + quoted(d.nguid()) + ", not " + nguid);
        }
        if (!uuid.toString().equals(d.uuid())) {
            throw new IllegalArgumentException("it is of namespace UUID " + quoted(d.uuid()) + ", not " + uuid
                    + " (a namespace's UUID changed while its NGUID stayed: if it is another volume, remove the file)");
        }
        if (d.nsid() < 1 || d.nsid() > 0xFFFF_FFFEL) {
            throw new IllegalArgumentException("nsid " + d.nsid() + " is not an NSID (1 to FFFFFFFEh)");
        }
        if (d.generation() < 0) {
            throw new IllegalArgumentException("generation " + d.generation() + " is negative");
        }
        if (d.type() < 0 || d.type() > Reservations.EXCLUSIVE_ACCESS_ALL_REGISTRANTS) {
            throw new IllegalArgumentException("type " + d.type() + " is not a reservation type (0: none, 1-6)");
        }
        if (d.registrants() == null) {
            throw new IllegalArgumentException("registrants is null (an empty list when there are none)");
        }
        List<NamespaceReservations.Registrant> regs = new ArrayList<>();
        java.util.Set<UUID> hosts = new java.util.HashSet<>();
        for (SavedRegistrant r : d.registrants()) {
            if (r == null) {
                throw new IllegalArgumentException("a registrant is null");
            }
            UUID host = uuidField("a registrant's hostId", r.hostId());
            if (!hosts.add(host)) {
                throw new IllegalArgumentException("host " + host + " is registered twice");
            }
            if (r.key() == null || !r.key().matches("[0-9a-fA-F]{1,16}")) {
                throw new IllegalArgumentException("host " + host + "'s key " + quoted(r.key())
                        + " is not 1 to 16 hex digits");
            }
            regs.add(new NamespaceReservations.Registrant(host, Long.parseUnsignedLong(r.key(), 16)));
        }
        UUID holder = d.holder() == null ? null : uuidField("holder", d.holder());
        if (d.type() == 0 && holder != null) {
            throw new IllegalArgumentException("holder " + holder + " is set, but no reservation is held (type 0)");
        }
        if (d.type() != 0 && regs.isEmpty()) {
            throw new IllegalArgumentException("a reservation of type " + d.type() + " is held with no registrant");
        }
        if (Reservations.allRegistrants(d.type()) && holder != null) {
            throw new IllegalArgumentException("holder " + holder + " is set, but every registrant holds a type "
                    + d.type() + " reservation");
        }
        if (d.type() != 0 && !Reservations.allRegistrants(d.type()) && (holder == null || !hosts.contains(holder))) {
            throw new IllegalArgumentException("the type " + d.type() + " reservation's holder "
                    + (holder == null ? "is missing" : holder + " is not a registrant"));
        }
        return new NamespaceReservations.State(d.generation(), d.type(), holder, regs, true);
    }

    private static UUID uuidField(String what, String s) {
        if (s == null || !s.matches("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")) {
            throw new IllegalArgumentException(what + " " + quoted(s) + " is not a UUID");
        }
        return UUID.fromString(s);
    }

    private static String quoted(String s) {
        return s == null ? "null" : "\"" + s + "\"";
    }

    private void writeAtomically(Path file, byte[] bytes) throws IOException {
        Files.createDirectories(dir);
        writeAtomically(file, file.resolveSibling(file.getFileName() + ".tmp"), bytes);
    }

    /**
     * Writes {@code bytes} to {@code file} whole or not at all: into {@code tmp} (owner only: which hosts hold which
     * keys is not for other users of the machine), synced, renamed over {@code file}, and the directory synced.
     */
    static void writeAtomically(Path file, Path tmp, byte[] bytes) throws IOException {
        Files.deleteIfExists(tmp);
        try (FileChannel ch = FileChannel.open(tmp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory(file.getParent());
    }

    private void syncDirectory() throws IOException {
        syncDirectory(dir);
    }

    private static void syncDirectory(Path dir) throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    /** A short stable name for a subsystem NQN (NQNs hold characters a file name should not). */
    static String digest(String nqn) {
        try {
            byte[] h = MessageDigest.getInstance("SHA-256").digest(nqn.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(h, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
