package io.nvmeof.protocol.tcp;

/** Response capsule PDU: common header and the 16-byte CQE at byte 8 (HLEN 24); never carries data. */
public final class CapsuleResponsePdu extends PduHeader {
    public static final int HEADER_LENGTH = 24;
    public static final int CQE = 8;

    @Override
    public int length() { return HEADER_LENGTH; }

    public int cqeOffset() { return offset + CQE; }
}
