package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Flyweight;

/**
 * Commands Supported and Effects log (LID 05h), 4096 bytes: one dword per admin opcode (ACS, from byte 0) and per I/O
 * opcode (IOCS, from byte 1024) saying whether the controller supports the command and what it may change.
 */
public final class CommandEffectsLog extends Flyweight {
    public static final int LENGTH = 4096;
    public static final int ACS = 0;
    public static final int IOCS = 1024;
    /** Command Supported. */
    public static final int CSUPP = 1;
    /** Logical Block Content Change: the command may change the content of logical blocks. */
    public static final int LBCC = 1 << 1;
    /** Namespace Capability Change. */
    public static final int NCC = 1 << 2;
    /** Namespace Inventory Change. */
    public static final int NIC = 1 << 3;

    @Override
    public int length() { return LENGTH; }

    public long admin(int opcode) { return u32(ACS + 4 * checkOpcode(opcode)); }
    public CommandEffectsLog admin(int opcode, int effects) { u32(ACS + 4 * checkOpcode(opcode), effects); return this; }
    public long io(int opcode) { return u32(IOCS + 4 * checkOpcode(opcode)); }
    public CommandEffectsLog io(int opcode, int effects) { u32(IOCS + 4 * checkOpcode(opcode), effects); return this; }

    private static int checkOpcode(int opcode) {
        if (opcode < 0 || opcode > 0xFF) {
            throw new IllegalArgumentException("opcode " + opcode);
        }
        return opcode;
    }
}
