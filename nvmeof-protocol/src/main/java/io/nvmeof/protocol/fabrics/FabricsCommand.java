package io.nvmeof.protocol.fabrics;

import io.nvmeof.protocol.Command;

/**
 * The fctype-specific fields of a Fabrics command (opcode 0x7F), NVMe-oF "Fabrics Command". Byte 4 is fctype; the
 * command-specific fields start at byte 40.
 */
public final class FabricsCommand extends Command {
    public static final int FCTYPE = 4;

    // Connect
    public static final int RECFMT = 40;
    public static final int QID = 42;
    public static final int SQSIZE = 44;
    public static final int CATTR = 46;
    public static final int KATO = 48;

    /** CATTR bit 2: the host asks to disable SQ flow control. */
    public static final int CATTR_DISABLE_SQ_FLOW_CONTROL = 0x4;
    /** CATTR bits 1:0 priority class; bit 3 I/O queue type (newer specs). */

    // Property Get / Set
    public static final int ATTRIB = 40;
    public static final int OFST = 44;
    public static final int VALUE = 48;

    // Authentication Send / Receive (NVMe Base 2.0, 5.3.x): CDW10 holds SPSP0, SPSP1 and SECP; CDW11 TL or AL.
    public static final int SPSP0 = 41;
    public static final int SPSP1 = 42;
    public static final int SECP = 43;
    /** Transfer length (Authentication Send) or allocation length (Authentication Receive). */
    public static final int AUTH_LENGTH = 44;
    /** SECP of NVMe in-band authentication (DH-HMAC-CHAP), with SPSP0 = SPSP1 = 1 as Linux and SPDK send them. */
    public static final int SECP_NVME_AUTH = 0xE9;
    public static final int SPSP_NVME_AUTH = 0x01;

    public int fctype() { return u8(FCTYPE); }
    public FabricsCommand fctype(int v) { u8(FCTYPE, v); return this; }

    public int recfmt() { return u16(RECFMT); }
    public FabricsCommand recfmt(int v) { u16(RECFMT, v); return this; }
    public int qid() { return u16(QID); }
    public FabricsCommand qid(int v) { u16(QID, v); return this; }
    /** SQ size, 0-based as on the wire. */
    public int sqsize() { return u16(SQSIZE); }
    public FabricsCommand sqsize(int v) { u16(SQSIZE, v); return this; }
    public int cattr() { return u8(CATTR); }
    public FabricsCommand cattr(int v) { u8(CATTR, v); return this; }
    public boolean sqFlowControlDisabled() { return (cattr() & CATTR_DISABLE_SQ_FLOW_CONTROL) != 0; }
    /** Keep Alive Timeout in milliseconds (0 disables keep alive). */
    public long kato() { return u32(KATO); }
    public FabricsCommand kato(long v) { u32(KATO, v); return this; }

    public int spsp0() { return u8(SPSP0); }
    public int spsp1() { return u8(SPSP1); }
    public int secp() { return u8(SECP); }
    /** TL of Authentication Send, AL of Authentication Receive. */
    public long authLength() { return u32(AUTH_LENGTH); }
    /** Fills CDW10 and CDW11 of an Authentication Send or Receive of NVMe in-band authentication. */
    public FabricsCommand auth(long length) {
        u8(40, 0);
        u8(SPSP0, SPSP_NVME_AUTH);
        u8(SPSP1, SPSP_NVME_AUTH);
        u8(SECP, SECP_NVME_AUTH);
        u32(AUTH_LENGTH, length);
        return this;
    }

    /** Property size from ATTRIB bits 2:0: 0 means 4 bytes, 1 means 8 bytes. */
    public int propertySize() { return (u8(ATTRIB) & 0x7) == 1 ? 8 : 4; }
    public FabricsCommand propertySize(int bytes) { u8(ATTRIB, bytes == 8 ? 1 : 0); return this; }
    public long propertyOffset() { return u32(OFST); }
    public FabricsCommand propertyOffset(long v) { u32(OFST, v); return this; }
    public long propertyValue() { return u64(VALUE); }
    public FabricsCommand propertyValue(long v) { u64(VALUE, v); return this; }
}
