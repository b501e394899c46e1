package io.nvmeof.tgt.tcp;

import io.nvmeof.protocol.tcp.ICRespPdu;

/**
 * Per-listener NVMe/TCP settings.
 *
 * @param inlineDataSize largest in-capsule data a host may send (0 disables in-capsule data)
 * @param maxH2CData largest data of one H2CData PDU (ICResp MAXH2CDATA); hosts refuse less than 4096
 * @param connectDeadlineMs how long a new connection has to complete ICReq and Connect before it is dropped
 */
public record TcpOptions(int inlineDataSize, int maxH2CData, int connectDeadlineMs) {
    /** Linux nvmet gives a TLS handshake 10 s; the same for ICReq and Connect here. */
    public static final int DEFAULT_CONNECT_DEADLINE_MS = 10_000;

    public static TcpOptions defaults() {
        return new TcpOptions(8192, 128 * 1024);
    }

    public TcpOptions(int inlineDataSize, int maxH2CData) {
        this(inlineDataSize, maxH2CData, DEFAULT_CONNECT_DEADLINE_MS);
    }

    public TcpOptions {
        if (connectDeadlineMs < 1) {
            throw new IllegalArgumentException("connectDeadlineMs must be positive, got " + connectDeadlineMs);
        }
        if (inlineDataSize < 0 || inlineDataSize > 1 << 20) {
            throw new IllegalArgumentException("inlineDataSize must be 0..1048576, got " + inlineDataSize);
        }
        if (inlineDataSize % 16 != 0) {
            throw new IllegalArgumentException("inlineDataSize must be a multiple of 16 (IOCCSZ is in 16-byte units)");
        }
        if (maxH2CData < ICRespPdu.MIN_MAXH2CDATA || maxH2CData > 16 << 20) {
            throw new IllegalArgumentException("maxH2CData must be 4096..16 MiB, got " + maxH2CData);
        }
    }
}
