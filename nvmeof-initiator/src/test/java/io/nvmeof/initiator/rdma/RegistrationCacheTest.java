package io.nvmeof.initiator.rdma;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

/** The lock-free lookup an I/O does to find the rkey of its buffer (the registrations themselves need a device). */
class RegistrationCacheTest {
    static RegistrationCache.Entry entry(long start, long length, int rkey) {
        return new RegistrationCache.Entry(start, start + length, rkey, rkey, null, null, false);
    }

    @Test
    void findsTheRegistrationCoveringTheWholeRange() {
        RegistrationCache.Entry a = entry(0x1000, 0x1000, 1);
        RegistrationCache.Entry b = entry(0x10000, 0x100000, 2);
        RegistrationCache.Entry[] sorted = {a, b};
        assertSame(a, RegistrationCache.find(sorted, 0x1000, 0x1000), "exactly the region");
        assertSame(a, RegistrationCache.find(sorted, 0x1800, 0x800), "a tail of it");
        assertNull(RegistrationCache.find(sorted, 0x1800, 0x801), "one byte past its end");
        assertNull(RegistrationCache.find(sorted, 0xFFF, 0x10), "one byte before its start");
        assertSame(b, RegistrationCache.find(sorted, 0x20000, 0x1000));
        assertNull(RegistrationCache.find(sorted, 0x8000, 0x10), "between registrations");
        assertNull(RegistrationCache.find(sorted, 0x200000, 0x10), "after the last");
        assertNull(RegistrationCache.find(new RegistrationCache.Entry[0], 0x1000, 1), "empty cache");
    }

    @Test
    void overlappingRegistrationsAreSearchedBackwards() {
        // A large buffer and, registered later, a slice inside it: a range beyond the slice but inside the large
        // buffer must still be found, although the slice starts closer to it.
        RegistrationCache.Entry big = entry(0x100000, 0x100000, 1);
        RegistrationCache.Entry slice = entry(0x110000, 0x1000, 2);
        RegistrationCache.Entry[] sorted = {big, slice};
        assertSame(slice, RegistrationCache.find(sorted, 0x110000, 0x1000));
        assertSame(big, RegistrationCache.find(sorted, 0x110800, 0x10000), "past the slice, inside the big buffer");
        assertSame(big, RegistrationCache.find(sorted, 0x100000, 0x100000));
    }
}
