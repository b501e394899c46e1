package io.nvmeof.protocol;

/**
 * Scatter gather list descriptor, 16 bytes (NVMe Base, "SGL Descriptor"). Byte 15 identifies it: type in bits 7:4,
 * sub type in bits 3:0. Keyed data blocks (RDMA) carry a 24-bit length and a 32-bit key.
 */
public final class SglDescriptor extends Flyweight {
    public static final int LENGTH = 16;

    public static final int ADDRESS = 0;
    public static final int DATA_LENGTH = 8;
    public static final int KEYED_LENGTH = 8;
    public static final int KEY = 11;
    public static final int IDENTIFIER = 15;

    // Descriptor types
    public static final int TYPE_DATA_BLOCK = 0x0;
    public static final int TYPE_BIT_BUCKET = 0x1;
    public static final int TYPE_SEGMENT = 0x2;
    public static final int TYPE_LAST_SEGMENT = 0x3;
    public static final int TYPE_KEYED_DATA_BLOCK = 0x4;
    public static final int TYPE_TRANSPORT_DATA_BLOCK = 0x5;

    // Sub types
    public static final int SUBTYPE_ADDRESS = 0x0;
    public static final int SUBTYPE_OFFSET = 0x1;
    public static final int SUBTYPE_TRANSPORT_A = 0xA;
    public static final int SUBTYPE_INVALIDATE_KEY = 0xF;

    /** Identifier of in-capsule data: data block, offset sub type (NVMe/TCP and RDMA). */
    public static final int ID_IN_CAPSULE = TYPE_DATA_BLOCK << 4 | SUBTYPE_OFFSET;
    /** Identifier NVMe/TCP hosts use for data moved by R2T/H2CData or C2HData: transport data block, transport A. */
    public static final int ID_TCP_TRANSPORT = TYPE_TRANSPORT_DATA_BLOCK << 4 | SUBTYPE_TRANSPORT_A;

    @Override
    public int length() {
        return LENGTH;
    }

    public long address() { return u64(ADDRESS); }
    public SglDescriptor address(long v) { u64(ADDRESS, v); return this; }

    /** Length of a (non-keyed) data block descriptor. */
    public long dataLength() { return u32(DATA_LENGTH); }
    public SglDescriptor dataLength(long v) { u32(DATA_LENGTH, v); return this; }

    /** Length of a keyed data block: 24 bits. */
    public int keyedLength() { return u8(KEYED_LENGTH) | u8(KEYED_LENGTH + 1) << 8 | u8(KEYED_LENGTH + 2) << 16; }
    public SglDescriptor keyedLength(int v) {
        u8(KEYED_LENGTH, v);
        u8(KEYED_LENGTH + 1, v >> 8);
        u8(KEYED_LENGTH + 2, v >> 16);
        return this;
    }

    public long key() { return u32(KEY); }
    public SglDescriptor key(long v) { u32(KEY, v); return this; }

    public int identifier() { return u8(IDENTIFIER); }
    public SglDescriptor identifier(int v) { u8(IDENTIFIER, v); return this; }
    public int type() { return u8(IDENTIFIER) >> 4; }
    public int subtype() { return u8(IDENTIFIER) & 0xF; }

    /** Describes in-capsule data at {@code capsuleOffset} of {@code length} bytes. */
    public SglDescriptor inCapsule(long capsuleOffset, long length) {
        address(capsuleOffset);
        dataLength(length);
        u8(12, 0);
        u16(13, 0);
        identifier(ID_IN_CAPSULE);
        return this;
    }

    /** Describes a transport data block (NVMe/TCP: data moved by R2T/H2CData or C2HData). */
    public SglDescriptor transportBlock(long length) {
        address(0);
        dataLength(length);
        u8(12, 0);
        u16(13, 0);
        identifier(ID_TCP_TRANSPORT);
        return this;
    }

    /** Describes a keyed data block: remote address, 24-bit length and key (RDMA). */
    public SglDescriptor keyed(long remoteAddress, int length, long rkey, boolean invalidate) {
        address(remoteAddress);
        keyedLength(length);
        key(rkey);
        identifier(TYPE_KEYED_DATA_BLOCK << 4 | (invalidate ? SUBTYPE_INVALIDATE_KEY : SUBTYPE_ADDRESS));
        return this;
    }
}
