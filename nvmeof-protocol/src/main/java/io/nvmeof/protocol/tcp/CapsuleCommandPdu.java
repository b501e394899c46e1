package io.nvmeof.protocol.tcp;

import io.nvmeof.protocol.Command;

/** Command capsule PDU: common header, the 64-byte SQE at byte 8 (HLEN 72), then optional in-capsule data at PDO. */
public final class CapsuleCommandPdu extends PduHeader {
    public static final int HEADER_LENGTH = 72;
    public static final int SQE = 8;

    @Override
    public int length() { return HEADER_LENGTH; }

    /** Offset of the SQE in the buffer, to wrap a {@link Command}. */
    public int sqeOffset() { return offset + SQE; }
}
