package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.protocol.log.DiscoveryLogHeader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What the controller sends at connect and in its discovery log is checked before the initiator sizes or indexes
 * anything with it: a bad value is refused with an {@link NvmeofException} saying what was wrong, never a raw runtime
 * exception (each case here was found by {@code InitiatorControllerFuzzTest#adminResponses}).
 */
@Timeout(30)
class ControllerDataValidationTest extends FakeTargetCase {
    private static ConnectOptions opts() {
        return ConnectOptions.builder().connectTimeout(Duration.ofSeconds(5)).commandTimeout(Duration.ofSeconds(2))
                .ctrlLossTimeout(Duration.ZERO).build();
    }

    private NvmeofController discovery() {
        target.discovery = true;
        return NvmeofController.connect(TransportId.tcp("127.0.0.1", target.port(), Nqn.DISCOVERY), opts());
    }

    private static void numrec(byte[] log, long numrec) {
        ByteBuffer.wrap(log).order(ByteOrder.LITTLE_ENDIAN).putLong(DiscoveryLogHeader.NUMREC, numrec);
    }

    /**
     * NUMREC is 64 bits: 2^64 - 1 made the log's length 0 (an IllegalArgumentException), 2^54 made it 1024 bytes and
     * the entries were read past them (IndexOutOfBoundsException); 2^20 would have allocated a GiB.
     */
    @Test
    void anAbsurdDiscoveryRecordCountIsRefused() {
        for (long numrec : new long[] {-1L, 1L << 54, 1L << 20, NvmeofController.MAX_DISCOVERY_RECORDS + 1L}) {
            target.edit = (what, data) -> {
                if (what.equals("discovery-log")) {
                    numrec(data, numrec);
                }
            };
            try (NvmeofController c = discovery()) {
                NvmeofException e = assertThrows(NvmeofException.class, c::discoveryLog, "NUMREC " + numrec);
                assertTrue(e.getMessage().contains("claims " + Long.toUnsignedString(numrec) + " records (NUMREC)"),
                        e.getMessage());
            }
        }
    }

    /** Up to the limit the log is read: three records, the third all zeroes past the two the target filled. */
    @Test
    void aDiscoveryRecordCountWithinTheLimitIsRead() {
        target.edit = (what, data) -> {
            if (what.equals("discovery-log")) {
                numrec(data, 3);
            }
        };
        try (NvmeofController c = discovery()) {
            List<DiscoveryEntry> log = c.discoveryLog();
            assertEquals(3, log.size());
            assertEquals(0, log.get(2).trtype());
            assertEquals("", log.get(2).traddr());
        }
    }

    private void namespaceList(long... nsids) {
        target.edit = (what, data) -> {
            if (what.equals("namespace-list")) {
                ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < 1024; i++) {
                    b.putInt(i * 4, (int) (i < nsids.length ? nsids[i] : nsids.length == 1 ? nsids[0] : 0));
                }
            }
        };
    }

    /** NSID FFFFFFFFh is the broadcast value: listed as active, it became a namespace handle; it is skipped. */
    @Test
    void theBroadcastNsidInTheNamespaceListIsSkipped() {
        namespaceList(1, 0xFFFF_FFFFL);
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(List.of(1L), nsids(c));
        }
    }

    /**
     * A list out of order is taken as Linux takes it, every NSID it names (here 1 after 2; the fake target has no
     * namespace 2, whose Identify fails, so it is skipped and the others served, as Linux does); a full page that
     * repeats itself, whatever NSID it is asked after, was asked for again forever (the connect never returned).
     */
    @Test
    void aNamespaceListOutOfOrderIsTakenAndARepeatingPageEnds() {
        namespaceList(2, 1);
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(List.of(1L), nsids(c));
        }
        namespaceList(1); // 1024 times NSID 1, whatever NSID the page is asked after
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(List.of(1L), nsids(c));
        }
    }

    private static List<Long> nsids(NvmeofController c) {
        return c.namespaces().stream().map(NamespaceHandle::nsid).sorted().toList();
    }

    /**
     * NSZE is 64 bits: 2^60 blocks of 512 B (or 2^64 - 1 blocks) made a handle whose size in bytes overflowed a long;
     * such a namespace is skipped, as one with an unusable block size is, and the controller connects without it.
     */
    @Test
    void aNamespaceBeyond2To63BytesIsSkipped() {
        for (long nsze : new long[] {1L << 60, -1L, (Long.MAX_VALUE >>> 9) + 1}) {
            target.edit = (what, data) -> {
                if (what.equals("identify-namespace")) {
                    ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).putLong(0, nsze);
                }
            };
            try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
                assertEquals(List.of(), c.namespaces(), "NSZE " + Long.toUnsignedString(nsze));
            }
        }
        target.edit = (what, data) -> {
            if (what.equals("identify-namespace")) {
                ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).putLong(0, Long.MAX_VALUE >>> 9);
            }
        };
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(Long.MAX_VALUE >>> 9 << 9, c.namespace(1).sizeBytes(), "the largest that fits");
        }
    }

    /**
     * MDTS is 2^MDTS pages, MDTS up to 255: 4 KiB << 51 wrapped to a negative limit, << 70 to 256 KiB (the shift
     * taken modulo 64). Beyond a long it is no limit, and the initiator's own 32 MiB cap applies, as for MDTS 0.
     */
    @Test
    void anMdtsBeyondALongIsNoLimit() {
        for (int mdts : new int[] {51, 52, 63, 64, 70, 255}) {
            byte[] id = new byte[4096];
            id[IdentifyController.MDTS] = (byte) mdts;
            assertEquals(Long.MAX_VALUE, ControllerInfo.decode(id, 4096).mdts(), "MDTS " + mdts);
            target.edit = (what, data) -> {
                if (what.equals("identify-controller")) {
                    data[IdentifyController.MDTS] = (byte) mdts;
                }
            };
            try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
                assertEquals(32L << 20, c.maxTransferBytes(), "MDTS " + mdts);
            }
        }
        byte[] id = new byte[4096];
        id[IdentifyController.MDTS] = 50;
        assertEquals(1L << 62, ControllerInfo.decode(id, 4096).mdts(), "the largest that fits");
        id[IdentifyController.MDTS] = 49;
        assertEquals(Long.MAX_VALUE, ControllerInfo.decode(id, 1 << 14).mdts(), "pages of 16 KiB overflow sooner");
    }

    /**
     * NVMe 2.0 allows 64 LBA formats: FLBAS bits 6:5 are the format index's high bits. Format 16 (FLBAS 20h) was
     * read as format 0, so a namespace of 4 KiB blocks became one of 512 B (found by the fuzz target's seed
     * nvm-format-index-above-15).
     */
    @Test
    void anLbaFormatIndexAbove15IsRead() {
        target.edit = (what, data) -> {
            if (what.equals("identify-namespace")) {
                IdentifyNamespace ns = new IdentifyNamespace().wrap(new UnsafeBuffer(data), 0);
                ns.nlbaf(16).flbas(0x20).lbaf(16, 0, 12, 0); // format 0 stays 512 B
            }
        };
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(4096, c.namespace(1).blockSize());
        }
    }

    /**
     * Blocks larger than the largest transfer (MDTS 5: 128 KiB) made a namespace no read or write could use
     * (maxBlocksPerIo 0); it is skipped, as Linux skips it. Blocks of exactly MDTS are used.
     */
    @Test
    void aBlockLargerThanMdtsIsSkipped() {
        for (int shift : new int[] {17, 18}) {
            target.edit = (what, data) -> {
                if (what.equals("identify-namespace")) {
                    new IdentifyNamespace().<IdentifyNamespace>wrap(new UnsafeBuffer(data), 0).lbaf(0, 0, shift, 0);
                }
            };
            try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
                assertEquals(128 * 1024, c.maxTransferBytes());
                if (shift == 17) {
                    assertEquals(1, c.namespace(1).maxBlocksPerIo(), "one block per command");
                } else {
                    assertEquals(List.of(), c.namespaces(), "blocks of 256 KiB");
                }
            }
        }
    }
}
