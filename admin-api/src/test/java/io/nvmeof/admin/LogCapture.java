package io.nvmeof.admin;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * What SLF4J's simple logger (the tests' logging backend) writes while this is open: it writes to the standard
 * error stream of the moment, which this tees into memory.
 */
final class LogCapture implements AutoCloseable {
    private final PrintStream original = System.err;
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

    LogCapture() {
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                original.write(b);
                captured.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                original.write(b, off, len);
                captured.write(b, off, len);
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
    }

    /** Every line captured so far. */
    List<String> lines() {
        return captured.toString(StandardCharsets.UTF_8).lines().toList();
    }

    /** The lines a logger wrote (its name as the simple logger prints it). */
    List<String> lines(String logger) {
        return lines().stream().filter(l -> l.contains(" " + logger + " - ")).toList();
    }

    @Override
    public void close() {
        System.setErr(original);
    }
}
