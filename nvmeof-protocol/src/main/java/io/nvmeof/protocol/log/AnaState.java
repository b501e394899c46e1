package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Status;
import java.util.Locale;

/**
 * An ANA group's state on a port (NVMe Base 2.0, 8.20.3; the ANA log's descriptor byte 16), with the names nvmetcli
 * writes to {@code ana_state} and the status an I/O command gets through a port where its namespace's group is in it.
 */
public enum AnaState {
    OPTIMIZED(0x1, "optimized", Status.SUCCESS),
    NON_OPTIMIZED(0x2, "non-optimized", Status.SUCCESS),
    INACCESSIBLE(0x3, "inaccessible", Status.ANA_INACCESSIBLE),
    PERSISTENT_LOSS(0x4, "persistent-loss", Status.ANA_PERSISTENT_LOSS),
    CHANGE(0xF, "change", Status.ANA_TRANSITION);

    private final int code;
    private final String label;
    private final int ioStatus;

    AnaState(int code, String label, int ioStatus) {
        this.code = code;
        this.label = label;
        this.ioStatus = ioStatus;
    }

    /** The value in the ANA log (4 bits). */
    public int code() { return code; }

    /** The name nvmetcli and Linux's sysfs {@code ana_state} use. */
    public String label() { return label; }

    /** What an I/O command to a namespace of a group in this state gets: success or a path error without DNR. */
    public int ioStatus() { return ioStatus; }

    public static AnaState ofCode(int code) {
        for (AnaState s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        throw new IllegalArgumentException("no ANA state has code " + code);
    }

    /** Parses a label ({@code non-optimized}); {@code non_optimized} and any case are taken too. */
    public static AnaState parse(String text) {
        if (text != null) {
            String t = text.trim().toLowerCase(Locale.ROOT).replace('_', '-');
            for (AnaState s : values()) {
                if (s.label.equals(t)) {
                    return s;
                }
            }
        }
        throw new IllegalArgumentException("ANA state '" + text + "' is not one of optimized, non-optimized,"
                + " inaccessible, persistent-loss, change");
    }
}
