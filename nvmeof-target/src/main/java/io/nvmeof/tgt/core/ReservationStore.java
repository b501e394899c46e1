package io.nvmeof.tgt.core;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
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
 */
public final class ReservationStore {
    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

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
                if (!subsystemNqn.equals(d.subsystem()) || !nguid.equals(d.nguid())
                        || !ns.uuid().toString().equals(d.uuid())) {
                    return null; // another volume's state (a name clash of the digest, or a UUID changed)
                }
                List<NamespaceReservations.Registrant> regs = new ArrayList<>();
                if (d.registrants() != null) {
                    for (SavedRegistrant r : d.registrants()) {
                        regs.add(new NamespaceReservations.Registrant(UUID.fromString(r.hostId()),
                                Long.parseUnsignedLong(r.key(), 16)));
                    }
                }
                return new NamespaceReservations.State(d.generation(), d.type(),
                        d.holder() != null ? UUID.fromString(d.holder()) : null, regs, true);
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

    private void writeAtomically(Path file, byte[] bytes) throws IOException {
        Files.createDirectories(dir);
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.deleteIfExists(tmp);
        // Owner only: which hosts hold which keys is not for other users of the machine.
        try (FileChannel ch = FileChannel.open(tmp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory();
    }

    private void syncDirectory() throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    /** A short stable name for a subsystem NQN (NQNs hold characters a file name should not). */
    private static String digest(String nqn) {
        try {
            byte[] h = MessageDigest.getInstance("SHA-256").digest(nqn.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(h, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
