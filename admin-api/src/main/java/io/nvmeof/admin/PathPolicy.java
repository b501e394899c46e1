package io.nvmeof.admin;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the API may put a file-backed namespace: only under the directories the target was started with
 * ({@code --allow-dir}), judged on the resolved path, so {@code ..} and symbolic links cannot escape them; a link
 * whose target does not exist is refused (files are created only at their own name, never through one). Without
 * any allowed directory, file backends are refused over the API (a request could otherwise overwrite any file the
 * target process may write).
 */
final class PathPolicy {
    private final List<Path> allowed = new ArrayList<>();

    PathPolicy(List<Path> dirs) throws IOException {
        for (Path d : dirs) {
            allowed.add(d.toRealPath());
        }
    }

    /** @throws ApiRefusal saying what to change */
    void check(String path) {
        if (allowed.isEmpty()) {
            throw refuse("file-backed namespaces cannot be created over the API unless the target was started with"
                    + " --allow-dir DIR; start it so, and give a path under DIR");
        }
        Path p;
        try {
            p = Path.of(path);
        } catch (java.nio.file.InvalidPathException e) { // a NUL character, for one: the client's string, not a bug
            throw refuse("path '" + path + "' is not a valid path: " + e.getReason());
        }
        if (!p.isAbsolute()) {
            throw refuse("path '" + path + "' must be absolute");
        }
        for (Path part : p) {
            if (part.toString().equals("..")) {
                throw refuse("path '" + path + "' must not contain '..'");
            }
        }
        Path resolved;
        try {
            Path parent = p.getParent();
            if (parent == null || !Files.isDirectory(parent)) {
                throw refuse("the directory of '" + path + "' does not exist");
            }
            if (!Files.exists(p) && Files.isSymbolicLink(p)) {
                // Where it points is not checked: the file is never created through a link (see FileBackend).
                throw refuse("path '" + path + "' is a symbolic link to " + Files.readSymbolicLink(p) + ", which does"
                        + " not exist; a file is created only at its own name: give the path the file should have");
            }
            resolved = Files.exists(p) ? p.toRealPath() : parent.toRealPath().resolve(p.getFileName());
        } catch (IOException e) {
            throw refuse("path '" + path + "' cannot be resolved: " + e.getMessage());
        }
        for (Path dir : allowed) {
            if (resolved.startsWith(dir) && !resolved.equals(dir)) {
                if (Files.isDirectory(resolved)) {
                    throw refuse("path '" + path + "' is a directory; give a file name");
                }
                return;
            }
        }
        throw refuse("path '" + path + "' (resolved: " + resolved + ") is outside the allowed directories " + allowed
                + "; use a path under one of them or start the target with --allow-dir for another");
    }

    private static ApiRefusal refuse(String message) {
        return new ApiRefusal(message);
    }

    /** A refusal that is not the configuration's: answered 400 like an invalid change. */
    static final class ApiRefusal extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ApiRefusal(String message) {
            super(message);
        }
    }
}
