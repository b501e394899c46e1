package io.nvmeof.protocol.identify;

import io.nvmeof.protocol.Flyweight;

/**
 * One entry of the Namespace Identification Descriptor list (CNS 03h): NIDT, NIDL, two reserved bytes and NIDL bytes
 * of identifier. The list is 4096 bytes and ends at the first entry whose NIDL is zero.
 */
public final class NamespaceDescriptor extends Flyweight {
    public static final int LIST_LENGTH = 4096;
    public static final int NIDT = 0;
    public static final int NIDL = 1;
    public static final int NID = 4;

    public static final int TYPE_EUI64 = 1;
    public static final int TYPE_NGUID = 2;
    public static final int TYPE_UUID = 3;
    public static final int TYPE_CSI = 4;

    @Override
    public int length() { return NID + nidl(); }

    public int nidt() { return u8(NIDT); }
    public int nidl() { return u8(NIDL); }

    public void nid(byte[] dst) { buffer.getBytes(offset + NID, dst, 0, nidl()); }

    /** Writes one descriptor at the current offset; returns its total length so the caller can advance. */
    public int write(int type, byte[] id) {
        u8(NIDT, type);
        u8(NIDL, id.length);
        u16(2, 0);
        buffer.putBytes(offset + NID, id);
        return NID + id.length;
    }
}
