package io.nvmeof.admin;

import io.nvmeof.tgt.config.TargetConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * The target's persisted configuration: {@code STATE_DIR/config.json}, the same document as {@code --print-config}
 * and {@code GET /api/v1/config}. Every accepted change is written whole and atomically (a temporary file, fsync,
 * rename over the old one, fsync of the directory), so a crash leaves the old or the new document, never half of one;
 * the one it replaces is kept as {@code config.json.prev}, unless the change removed or replaced a host's secret: then
 * the previous copy is the new document too, so no secret outlives its deletion on disk (issue 51).
 */
public final class StateFile {
    public static final String NAME = "config.json";

    private final Path dir;

    public StateFile(Path dir) {
        this.dir = dir;
    }

    public Path path() {
        return dir.resolve(NAME);
    }

    public Path previous() {
        return dir.resolve(NAME + ".prev");
    }

    public boolean exists() {
        return Files.exists(path());
    }

    /**
     * The saved document. A file that cannot be read as one is refused, naming it and the last good copy; it is
     * left where it is for inspection.
     */
    public TargetConfig load() throws IOException {
        try {
            return TargetConfig.load(path());
        } catch (IOException e) {
            throw new IOException("the target's state file " + path() + " is not a valid configuration (" + e.getMessage()
                    + "); it was left as it is. "
                    + (Files.exists(previous()) ? "The previous good copy is " + previous() + ": move it over " + path()
                    + " to start from it" : "Remove it to start from the command line's configuration") + ".", e);
        }
    }

    /**
     * Writes {@code config} atomically, keeping the document it replaces as {@code config.json.prev} (atomically too;
     * the new document there where the change drops a secret). A failure leaves {@code config.json} as it was and says
     * which file could not be written and why.
     */
    public synchronized void save(TargetConfig config) throws IOException {
        try {
            write(config, (config.toJson() + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IOException("the state file " + path() + " could not be written: " + why(e), e);
        }
    }

    private void write(TargetConfig config, byte[] document) throws IOException {
        Files.createDirectories(dir);
        Path tmp = dir.resolve(NAME + ".tmp");
        writeDurably(tmp, document);
        if (Files.exists(path())) {
            if (dropsASecret(config)) {
                Path copy = dir.resolve(NAME + ".prev.tmp");
                writeDurably(copy, document);
                Files.move(copy, previous(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } else {
                keepPrevious();
            }
        }
        Files.move(tmp, path(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory(); // the renames themselves are durable
    }

    /**
     * Whether the document on disk holds a host secret {@code next} does not (deleted, rotated, or its host removed).
     * One that cannot be read counts as holding one: it is not kept, whatever it holds.
     */
    private boolean dropsASecret(TargetConfig next) {
        java.util.Set<String> now;
        try {
            now = secretsOf(TargetConfig.load(path()));
        } catch (IOException | RuntimeException e) {
            return true;
        }
        now.removeAll(secretsOf(next));
        return !now.isEmpty();
    }

    private static java.util.Set<String> secretsOf(TargetConfig config) {
        java.util.Set<String> out = new java.util.HashSet<>();
        if (config.hosts() != null) {
            for (TargetConfig.HostConfig h : config.hosts()) {
                if (h == null) {
                    continue;
                }
                for (String s : new String[] {h.dhchapKey(), h.dhchapCtrlKey(), h.tlsKey()}) {
                    if (s != null) {
                        out.add(s.strip());
                    }
                }
            }
        }
        return out;
    }

    /** A new file only its owner can read (0600): the document holds the hosts' secrets. */
    private static FileChannel ownerOnly(Path file) throws IOException {
        Files.deleteIfExists(file);
        try {
            return FileChannel.open(file, java.util.Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                    java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                            java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            return FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE); // not POSIX
        }
    }

    /**
     * The current document becomes {@code config.json.prev} by a second name (a hard link: nothing is copied, so the
     * cost does not grow with the document) renamed over the old one; where hard links are not supported, by a copy
     * written and synced first. Either way a crash leaves the old or the new previous copy, never part of one.
     */
    private void keepPrevious() throws IOException {
        Path link = dir.resolve(NAME + ".prev.tmp");
        Files.deleteIfExists(link);
        try {
            Files.createLink(link, path());
        } catch (UnsupportedOperationException | IOException e) {
            writeDurably(link, Files.readAllBytes(path()));
        }
        Files.move(link, previous(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static void writeDurably(Path file, byte[] bytes) throws IOException {
        // Owner only (0600): the document holds the hosts' DH-HMAC-CHAP secrets.
        try (FileChannel ch = ownerOnly(file)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
    }

    private void syncDirectory() throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    /** What went wrong, for an administrator: the file and the reason, without Java's exception names. */
    private static String why(IOException e) {
        if (e instanceof FileSystemException f) {
            String reason = f instanceof AccessDeniedException ? "permission denied"
                    : f instanceof FileAlreadyExistsException ? "exists and is not a directory"
                    : f instanceof NoSuchFileException ? "does not exist"
                    : f.getReason() != null ? f.getReason() : "cannot be written";
            return f.getFile() != null ? f.getFile() + ": " + reason : reason;
        }
        return e.getMessage() != null ? e.getMessage() : "an I/O error";
    }
}
