package io.nvmeof.admin;

import io.nvmeof.target.config.TargetConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * The target's persisted configuration: {@code STATE_DIR/config.json}, the same document as {@code --print-config}
 * and {@code GET /api/v1/config}. Every accepted change is written whole and atomically (a temporary file, fsync,
 * rename over the old one, fsync of the directory), so a crash leaves the old or the new document, never half of one;
 * the one it replaces is kept as {@code config.json.prev}.
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

    /** Writes {@code config} atomically, keeping the document it replaces as {@code config.json.prev}. */
    public synchronized void save(TargetConfig config) throws IOException {
        Files.createDirectories(dir);
        Path tmp = dir.resolve(NAME + ".tmp");
        byte[] bytes = (config.toJson() + "\n").getBytes(StandardCharsets.UTF_8);
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        if (Files.exists(path())) {
            Files.copy(path(), previous(), StandardCopyOption.REPLACE_EXISTING);
        }
        Files.move(tmp, path(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true); // the rename itself is durable
        }
    }
}
