package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Flyweight;

/** Discovery log page entry, 1024 bytes (NVMe-oF, "Discovery Log Page Entry"). */
public final class DiscoveryLogEntry extends Flyweight {
    public static final int LENGTH = 1024;
    public static final int TRTYPE = 0;
    public static final int ADRFAM = 1;
    public static final int SUBTYPE = 2;
    public static final int TREQ = 3;
    public static final int PORTID = 4;
    public static final int CNTLID = 6;
    public static final int ASQSZ = 8;
    public static final int EFLAGS = 10;
    public static final int TRSVCID = 32;
    public static final int SUBNQN = 256;
    public static final int TRADDR = 512;
    public static final int TSAS = 768;

    public static final int TRTYPE_RDMA = 1;
    public static final int TRTYPE_FC = 2;
    public static final int TRTYPE_TCP = 3;
    public static final int TRTYPE_LOOP = 254;

    public static final int ADRFAM_IPV4 = 1;
    public static final int ADRFAM_IPV6 = 2;

    /** A discovery subsystem that refers to another discovery service. */
    public static final int SUBTYPE_DISCOVERY_REFERRAL = 1;
    public static final int SUBTYPE_NVM = 2;
    /** The discovery subsystem the host is connected to. */
    public static final int SUBTYPE_CURRENT_DISCOVERY = 3;

    /** TREQ bits 1:0: secure channel not specified (0), required (1), not required (2); bit 2: SQ flow control disable supported. */
    public static final int TREQ_NOT_SPECIFIED = 0;
    public static final int TREQ_REQUIRED = 1;
    public static final int TREQ_NOT_REQUIRED = 2;
    public static final int TREQ_DISABLE_SQFLOW = 4;

    /** The dynamic controller ID. */
    public static final int CNTLID_DYNAMIC = 0xFFFF;

    /** TCP TSAS byte 0, SECTYPE: no security, or TLS 1.3 (1 was TLS 1.2, which NVMe/TCP no longer uses). */
    public static final int TCP_SECTYPE_NONE = 0;
    public static final int TCP_SECTYPE_TLS13 = 2;

    // RDMA TSAS: QPTYPE byte 0 (1 reliable connected), PRTYPE byte 1 (1 not specified), CMS byte 2 (1 RDMA_CM),
    // PKEY bytes 9:8.
    public static final int RDMA_QPTYPE_RC = 1;
    public static final int RDMA_PRTYPE_NOT_SPECIFIED = 1;
    public static final int RDMA_CMS_RDMA_CM = 1;

    @Override
    public int length() { return LENGTH; }

    public int trtype() { return u8(TRTYPE); }
    public DiscoveryLogEntry trtype(int v) { u8(TRTYPE, v); return this; }
    public int adrfam() { return u8(ADRFAM); }
    public DiscoveryLogEntry adrfam(int v) { u8(ADRFAM, v); return this; }
    public int subtype() { return u8(SUBTYPE); }
    public DiscoveryLogEntry subtype(int v) { u8(SUBTYPE, v); return this; }
    public int treq() { return u8(TREQ); }
    public DiscoveryLogEntry treq(int v) { u8(TREQ, v); return this; }
    public int portid() { return u16(PORTID); }
    public DiscoveryLogEntry portid(int v) { u16(PORTID, v); return this; }
    public int cntlid() { return u16(CNTLID); }
    public DiscoveryLogEntry cntlid(int v) { u16(CNTLID, v); return this; }
    /** Admin max SQ size (1-based). */
    public int asqsz() { return u16(ASQSZ); }
    public DiscoveryLogEntry asqsz(int v) { u16(ASQSZ, v); return this; }
    public int eflags() { return u16(EFLAGS); }
    public DiscoveryLogEntry eflags(int v) { u16(EFLAGS, v); return this; }
    public String trsvcid() { return spaceOrNul(TRSVCID, 32); }
    public DiscoveryLogEntry trsvcid(String v) { spaceString(TRSVCID, 32, v); return this; }
    public String subnqn() { return nulString(SUBNQN, 256); }
    public DiscoveryLogEntry subnqn(String v) { nulString(SUBNQN, 256, v); return this; }
    public String traddr() { return spaceOrNul(TRADDR, 256); }
    public DiscoveryLogEntry traddr(String v) { spaceString(TRADDR, 256, v); return this; }
    public int tsas(int index) { return u8(TSAS + index); }
    public DiscoveryLogEntry tsas(int index, int v) { u8(TSAS + index, v); return this; }

    /** TRSVCID and TRADDR are ASCII padded with spaces (Linux) or NULs (some targets); accept both. */
    private String spaceOrNul(int at, int max) {
        return spaceString(at, max);
    }
}
