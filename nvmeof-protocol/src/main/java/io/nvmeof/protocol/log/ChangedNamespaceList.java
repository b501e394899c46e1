package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Flyweight;

/**
 * Changed Namespace List log (LID 04h): up to 1024 NSIDs, 4096 bytes, zero-terminated. When more than 1024 changed,
 * the first entry is FFFFFFFFh.
 */
public final class ChangedNamespaceList extends Flyweight {
    public static final int LENGTH = 4096;
    public static final int MAX_ENTRIES = 1024;
    public static final long OVERFLOW = 0xFFFF_FFFFL;

    @Override
    public int length() { return LENGTH; }

    public long nsid(int index) { return u32(index * 4); }
    public ChangedNamespaceList nsid(int index, long nsid) { u32(index * 4, nsid); return this; }
}
