package io.nvmeof.protocol.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** RDMA CM private data at the NVMe/RDMA transport specification's byte offsets, and connect request checks. */
class RdmaCmTest {
    static int le16(byte[] b, int at) {
        return (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8;
    }

    static byte[] request(int recfmt, int qid, int hrqsize, int hsqsize) {
        byte[] b = new byte[32];
        new RdmaCmRequest().<RdmaCmRequest>wrap(new UnsafeBuffer(b), 0).recfmt(recfmt).qid(qid).hrqsize(hrqsize).hsqsize(hsqsize);
        return b;
    }

    @Test
    void requestAcceptRejectOffsets() {
        byte[] b = request(0, 3, 128, 127);
        new RdmaCmRequest().<RdmaCmRequest>wrap(new UnsafeBuffer(b), 0).cntlid(0x1234);
        assertEquals(0, le16(b, 0), "RECFMT at 0");
        assertEquals(3, le16(b, 2), "QID at 2");
        assertEquals(128, le16(b, 4), "HRQSIZE at 4");
        assertEquals(127, le16(b, 6), "HSQSIZE at 6");
        assertEquals(0x1234, le16(b, 8), "CNTLID at 8");
        byte[] a = new byte[32];
        new RdmaCmAccept().<RdmaCmAccept>wrap(new UnsafeBuffer(a), 0).recfmt(0).crqsize(128);
        assertEquals(128, le16(a, 2), "CRQSIZE at 2");
        byte[] r = new byte[4];
        new RdmaCmReject().<RdmaCmReject>wrap(new UnsafeBuffer(r), 0).recfmt(0).sts(RdmaCmReject.STS_INVALID_HSQSIZE);
        assertEquals(4, le16(r, 2), "STS at 2");
        assertEquals("invalid HSQSIZE", RdmaCmReject.stsName(4));
    }

    static RdmaConnectParameters parse(byte[] b, int length) {
        return RdmaConnectParameters.parse(new UnsafeBuffer(b), length, 32, 128, 8);
    }

    @Test
    void linuxAndSpdkConventionsBothAccepted() {
        RdmaConnectParameters linuxAdmin = parse(request(0, 0, 32, 31), 32);
        assertTrue(linuxAdmin.acceptable());
        assertEquals(32, linuxAdmin.receiveDepth());
        RdmaConnectParameters linuxIo = parse(request(0, 1, 128, 127), 32);
        assertEquals(128, linuxIo.receiveDepth());
        RdmaConnectParameters spdkIo = parse(request(0, 1, 129, 128), 32);
        assertTrue(spdkIo.acceptable(), "SPDK's N+1, N for a 128-entry queue");
        assertEquals(129, spdkIo.receiveDepth());
        assertEquals(33, parse(request(0, 0, 33, 32), 32).receiveDepth(), "SPDK admin 33/32");
    }

    @Test
    void badRequestsGetTheRightRejectStatus() {
        assertEquals(RdmaCmReject.STS_INVALID_LENGTH, parse(request(0, 1, 128, 127), 16).rejectStatus());
        assertEquals(RdmaCmReject.STS_INVALID_LENGTH, RdmaConnectParameters.parse(null, 0, 32, 128, 8).rejectStatus());
        assertEquals(RdmaCmReject.STS_INVALID_RECFMT, parse(request(1, 1, 128, 127), 32).rejectStatus());
        assertEquals(RdmaCmReject.STS_INVALID_QID, parse(request(0, 9, 128, 127), 32).rejectStatus());
        assertEquals(RdmaCmReject.STS_INVALID_HSQSIZE, parse(request(0, 0, 64, 63), 32).rejectStatus(), "admin queue too deep");
        assertEquals(RdmaCmReject.STS_INVALID_HRQSIZE, parse(request(0, 1, 0, 127), 32).rejectStatus());
        assertFalse(parse(request(0, 1, 0, 127), 32).acceptable());
    }

    /** What both Linux nvmet and SPDK accept is accepted (docs/conformance.md, "Refusals compared"). */
    @Test
    void sizesTheReferenceTargetsTakeAreTakenAndClamped() {
        RdmaConnectParameters deep = parse(request(0, 1, 300, 299), 32);
        assertTrue(deep.acceptable(), "an I/O queue deeper than MQES + 1 is clamped, not rejected");
        assertEquals(129, deep.receiveDepth(), "clamped to the largest queue served plus one");
        assertEquals(129, deep.hostReceiveQueueSize());
        RdmaConnectParameters one = parse(request(0, 1, 1, 0), 32);
        assertTrue(one.acceptable(), "HSQSIZE 0: one command");
        assertEquals(1, one.receiveDepth());
        assertTrue(parse(request(0, 0, 32, 0), 32).acceptable(), "admin HSQSIZE 0, as nvmet accepts");
    }
}
