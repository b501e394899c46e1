package io.nvmeof.tgt.tcp;

import io.nvmeof.protocol.tcp.ICRespPdu;
import io.nvmeof.tgt.core.TlsMode;

/**
 * Per-listener NVMe/TCP settings.
 *
 * @param inlineDataSize largest in-capsule data a host may send (0 disables in-capsule data)
 * @param maxH2CData largest data of one H2CData PDU (ICResp MAXH2CDATA); hosts refuse less than 4096
 * @param connectDeadlineMs how long a new connection has to complete ICReq and Connect (and before them the TLS
 *        handshake) before it is dropped
 * @param tls whether connections use TLS
 */
public record TcpOptions(int inlineDataSize, int maxH2CData, int connectDeadlineMs, TlsMode tls) {
    /** Linux nvmet gives a TLS handshake 10 s; the same for ICReq and Connect here. */
    public static final int DEFAULT_CONNECT_DEADLINE_MS = 10_000;

    public static TcpOptions defaults() {
        return new TcpOptions(8192, 128 * 1024);
    }

    public TcpOptions(int inlineDataSize, int maxH2CData) {
        this(inlineDataSize, maxH2CData, DEFAULT_CONNECT_DEADLINE_MS, TlsMode.NONE);
    }

    public TcpOptions(int inlineDataSize, int maxH2CData, int connectDeadlineMs) {
        this(inlineDataSize, maxH2CData, connectDeadlineMs, TlsMode.NONE);
    }

    /** These options with TLS set to {@code mode}. */
    public TcpOptions withTls(TlsMode mode) {
        return new TcpOptions(inlineDataSize, maxH2CData, connectDeadlineMs, mode);
    }

    public TcpOptions {
        if (tls == null) {
            throw new IllegalArgumentException("tls must be given (TlsMode.NONE for plain TCP)");
        }
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
