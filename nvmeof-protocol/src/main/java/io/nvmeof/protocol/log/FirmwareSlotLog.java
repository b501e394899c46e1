package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Flyweight;
import java.nio.charset.StandardCharsets;

/** Firmware Slot Information log (LID 03h), 512 bytes: the active slot and each slot's firmware revision. */
public final class FirmwareSlotLog extends Flyweight {
    public static final int LENGTH = 512;
    /** Active Firmware Info: bits 2:0 the active slot, bits 6:4 the slot activated at the next reset. */
    public static final int AFI = 0;
    /** Firmware Revision for Slot 1; slot N is at FRS1 + 8 * (N - 1). */
    public static final int FRS1 = 8;
    public static final int SLOTS = 7;
    private static final int REVISION_LENGTH = 8;

    @Override
    public int length() { return LENGTH; }

    public int activeSlot() { return u8(AFI) & 0x7; }
    public FirmwareSlotLog activeSlot(int slot) { u8(AFI, slot & 0x7); return this; }

    /** Slot 1 to 7's revision, as 8 ASCII characters padded with spaces. */
    public String revision(int slot) {
        byte[] b = new byte[REVISION_LENGTH];
        buffer.getBytes(offset + slotOffset(slot), b);
        return new String(b, StandardCharsets.US_ASCII).trim();
    }

    public FirmwareSlotLog revision(int slot, String revision) {
        byte[] b = revision.getBytes(StandardCharsets.US_ASCII);
        if (b.length > REVISION_LENGTH) {
            throw new IllegalArgumentException("a firmware revision has at most 8 characters: " + revision);
        }
        int at = offset + slotOffset(slot);
        buffer.setMemory(at, REVISION_LENGTH, (byte) ' ');
        buffer.putBytes(at, b);
        return this;
    }

    private static int slotOffset(int slot) {
        if (slot < 1 || slot > SLOTS) {
            throw new IllegalArgumentException("firmware slots are 1 to 7, not " + slot);
        }
        return FRS1 + REVISION_LENGTH * (slot - 1);
    }
}
