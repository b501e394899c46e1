package io.nvmeof.protocol.tcp;

import static io.nvmeof.protocol.Raw.*;
import static org.junit.jupiter.api.Assertions.*;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Status;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** NVMe/TCP transport PDUs (NVMe/TCP Transport Specification, "PDU Common Header" and per-PDU formats). */
class TcpPduTest {
    @Test
    void commonHeaderLayout() {
        UnsafeBuffer buf = buffer(16);
        PduHeader h = new PduHeader().wrap(buf, 0);
        assertEquals(8, h.length());
        h.header(0x04, 0x03, 72, 80, 0x01020304L);
        assertEquals(0x04, u8(buf, 0), "type");
        assertEquals(0x03, u8(buf, 1), "flags");
        assertEquals(72, u8(buf, 2), "hlen");
        assertEquals(80, u8(buf, 3), "pdo");
        assertEquals(0x01020304L, le32(buf, 4), "plen");
        assertEquals(0x04, u8(buf, 4));
        assertEquals(0, nonZero(buf, 8, 16));
        h.pduFlags(0x0C).pdo(0).plen(0xFFFFFFFFL);
        assertEquals(0x0C, u8(buf, 1));
        assertEquals(0, u8(buf, 3));
        assertEquals(0xFFFFFFFFL, le32(buf, 4));
    }

    @Test
    void commonHeaderDecode() {
        UnsafeBuffer buf = buffer(32);
        put8(buf, 8, 0x07);
        put8(buf, 9, 0x0E);
        put8(buf, 10, 24);
        put8(buf, 11, 24);
        put32(buf, 12, 0x80000018L);
        PduHeader h = new PduHeader().wrap(buf, 8);
        assertEquals(7, h.type());
        assertEquals(0x0E, h.pduFlags());
        assertEquals(24, h.hlen());
        assertEquals(24, h.pdo());
        assertEquals(0x80000018L, h.plen());
        assertFalse(h.hasHeaderDigest());
        assertTrue(h.hasDataDigest());
        put8(buf, 9, 0x01);
        assertTrue(h.hasHeaderDigest());
        assertFalse(h.hasDataDigest());
    }

    @Test
    void typesAndFlags() {
        assertEquals(0x00, PduHeader.TYPE_IC_REQ);
        assertEquals(0x01, PduHeader.TYPE_IC_RESP);
        assertEquals(0x02, PduHeader.TYPE_H2C_TERM_REQ);
        assertEquals(0x03, PduHeader.TYPE_C2H_TERM_REQ);
        assertEquals(0x04, PduHeader.TYPE_CAPSULE_CMD);
        assertEquals(0x05, PduHeader.TYPE_CAPSULE_RESP);
        assertEquals(0x06, PduHeader.TYPE_H2C_DATA);
        assertEquals(0x07, PduHeader.TYPE_C2H_DATA);
        assertEquals(0x09, PduHeader.TYPE_R2T);
        assertEquals(0x01, PduHeader.FLAG_HDGST);
        assertEquals(0x02, PduHeader.FLAG_DDGST);
        assertEquals(0x04, PduHeader.FLAG_DATA_LAST);
        assertEquals(0x08, PduHeader.FLAG_DATA_SUCCESS);
        assertEquals(4, PduHeader.DIGEST_LENGTH);
        assertEquals(0x1, ICReqPdu.DIGEST_HEADER);
        assertEquals(0x2, ICReqPdu.DIGEST_DATA);
    }

    @Test
    void headerLengthForEveryType() {
        assertEquals(128, PduHeader.headerLength(0x00));
        assertEquals(128, PduHeader.headerLength(0x01));
        assertEquals(24, PduHeader.headerLength(0x02));
        assertEquals(24, PduHeader.headerLength(0x03));
        assertEquals(72, PduHeader.headerLength(0x04));
        assertEquals(24, PduHeader.headerLength(0x05));
        assertEquals(24, PduHeader.headerLength(0x06));
        assertEquals(24, PduHeader.headerLength(0x07));
        assertEquals(-1, PduHeader.headerLength(0x08));
        assertEquals(24, PduHeader.headerLength(0x09));
        for (int t = 0x0A; t <= 0xFF; t++) {
            assertEquals(-1, PduHeader.headerLength(t), "type " + t);
        }
        assertEquals(-1, PduHeader.headerLength(-1));
        assertEquals("CapsuleCmd", PduHeader.typeName(4));
        assertEquals("PDU type 0x08", PduHeader.typeName(8));
    }

    @Test
    void icReqLayout() {
        UnsafeBuffer buf = buffer(128);
        buf.setMemory(0, 128, (byte) 0xEE);
        ICReqPdu p = new ICReqPdu().wrap(buf, 0);
        assertEquals(128, p.length());
        p.init().pfv(0x0102).hpda(3).digest(0x3).maxr2t(0x0A0B0C0DL);
        assertEquals(0x00, u8(buf, 0));
        assertEquals(0x00, u8(buf, 1));
        assertEquals(128, u8(buf, 2));
        assertEquals(0, u8(buf, 3));
        assertEquals(128, le32(buf, 4));
        assertEquals(0x0102, le16(buf, 8), "PFV");
        assertEquals(3, u8(buf, 10), "HPDA");
        assertEquals(3, u8(buf, 11), "DIGEST");
        assertEquals(0x0A0B0C0DL, le32(buf, 12), "MAXR2T");
        assertEquals(0, nonZero(buf, 16, 128), "reserved bytes zeroed");

        buf.setMemory(0, 128, (byte) 0);
        put16(buf, 8, 0);
        put8(buf, 10, 7);
        put8(buf, 11, 0x1);
        put32(buf, 12, 0xFFFFFFFFL);
        assertEquals(0, p.pfv());
        assertEquals(7, p.hpda());
        assertEquals(1, p.digest());
        assertEquals(0xFFFFFFFFL, p.maxr2t());
        assertEquals(0, ICReqPdu.PFV_1_0);
    }

    @Test
    void icRespLayout() {
        UnsafeBuffer buf = buffer(136);
        buf.setMemory(0, 136, (byte) 0xEE);
        ICRespPdu p = new ICRespPdu().wrap(buf, 8);
        assertEquals(128, p.length());
        p.init().pfv(0).cpda(0x1F).digest(0x2).maxh2cdata(0x20000);
        assertEquals(0xEE, u8(buf, 7), "nothing before the PDU");
        assertEquals(0x01, u8(buf, 8));
        assertEquals(128, u8(buf, 10));
        assertEquals(0, u8(buf, 11));
        assertEquals(128, le32(buf, 12));
        assertEquals(0, le16(buf, 16), "PFV");
        assertEquals(0x1F, u8(buf, 18), "CPDA");
        assertEquals(0x02, u8(buf, 19), "DIGEST");
        assertEquals(0x20000L, le32(buf, 20), "MAXH2CDATA");
        assertEquals(0, nonZero(buf, 24, 136));

        put16(buf, 16, 0x0001);
        put8(buf, 18, 0x02);
        put8(buf, 19, 0x01);
        put32(buf, 20, 0x1000);
        assertEquals(1, p.pfv());
        assertEquals(2, p.cpda());
        assertEquals(1, p.digest());
        assertEquals(0x1000, p.maxh2cdata());
        assertEquals(4096, ICRespPdu.MIN_MAXH2CDATA);
    }

    @Test
    void termReqLayout() {
        UnsafeBuffer buf = buffer(64);
        buf.setMemory(0, 64, (byte) 0xEE);
        TermReqPdu p = new TermReqPdu().wrap(buf, 0);
        assertEquals(24, p.length());
        p.init(PduHeader.TYPE_C2H_TERM_REQ, TermReqPdu.FES_INVALID_HEADER_FIELD, 0x0A0B0C0DL, 24);
        assertEquals(0x03, u8(buf, 0));
        assertEquals(0, u8(buf, 1));
        assertEquals(24, u8(buf, 2), "HLEN");
        assertEquals(0, u8(buf, 3), "PDO is reserved in term requests");
        assertEquals(48, le32(buf, 4), "PLEN = 24 + error data");
        assertEquals(0x0001, le16(buf, 8), "FES u16 at 8");
        assertEquals(0x0A0B0C0DL, le32(buf, 10), "FEI u32 at 10");
        assertEquals(0, nonZero(buf, 14, 24), "reserved");
        assertEquals(0xEE, u8(buf, 24), "init does not touch the error data");

        p.init(PduHeader.TYPE_H2C_TERM_REQ, TermReqPdu.FES_HEADER_DIGEST_ERROR, 0, 0);
        assertEquals(0x02, u8(buf, 0));
        assertEquals(24, u8(buf, 2));
        assertEquals(0, u8(buf, 3), "no error data, no PDO");
        assertEquals(24, le32(buf, 4));
        assertEquals(3, le16(buf, 8));

        put16(buf, 8, 0x0106);
        put32(buf, 10, 0xFFFFFFF0L);
        assertEquals(0x0106, p.fes());
        assertEquals(0xFFFFFFF0L, p.fei());
        assertEquals(1, TermReqPdu.FES_INVALID_HEADER_FIELD);
        assertEquals(2, TermReqPdu.FES_PDU_SEQUENCE_ERROR);
        assertEquals(3, TermReqPdu.FES_HEADER_DIGEST_ERROR);
        assertEquals(4, TermReqPdu.FES_DATA_OUT_OF_RANGE);
        assertEquals(5, TermReqPdu.FES_R2T_LIMIT_EXCEEDED);
        assertEquals(5, TermReqPdu.FES_DATA_LIMIT_EXCEEDED);
        assertEquals(6, TermReqPdu.FES_UNSUPPORTED_PARAMETER);
        assertEquals(128, TermReqPdu.MAX_ERROR_DATA);
    }

    @Test
    void capsuleCommandCarriesSqeAtByte8() {
        UnsafeBuffer buf = buffer(72 + 16);
        CapsuleCommandPdu p = new CapsuleCommandPdu().wrap(buf, 0);
        assertEquals(72, p.length());
        p.header(PduHeader.TYPE_CAPSULE_CMD, PduHeader.FLAG_HDGST, 72, 0, 76);
        assertEquals(8, p.sqeOffset());
        Command c = new Command().wrap(buf, p.sqeOffset());
        c.opcode(0x02).cid(0x1234).cdw10(0x55);
        assertEquals(0x04, u8(buf, 0));
        assertEquals(0x01, u8(buf, 1));
        assertEquals(72, u8(buf, 2));
        assertEquals(76, le32(buf, 4));
        assertEquals(0x02, u8(buf, 8), "SQE opcode at PDU byte 8");
        assertEquals(0x1234, le16(buf, 10));
        assertEquals(0x55, u8(buf, 48), "CDW10 at PDU byte 8 + 40");
        UnsafeBuffer big = buffer(200);
        assertEquals(108, new CapsuleCommandPdu().<CapsuleCommandPdu>wrap(big, 100).sqeOffset());
    }

    @Test
    void capsuleResponseCarriesCqeAtByte8() {
        UnsafeBuffer buf = buffer(24);
        CapsuleResponsePdu p = new CapsuleResponsePdu().wrap(buf, 0);
        assertEquals(24, p.length());
        p.header(PduHeader.TYPE_CAPSULE_RESP, 0, 24, 0, 24);
        assertEquals(8, p.cqeOffset());
        Completion c = new Completion().wrap(buf, p.cqeOffset());
        c.cid(0xABCD).sqhd(5).status(Status.INVALID_OPCODE | Status.DNR);
        assertEquals(0x05, u8(buf, 0));
        assertEquals(24, u8(buf, 2));
        assertEquals(5, le16(buf, 16), "SQHD at PDU 8+8");
        assertEquals(0xABCD, le16(buf, 20), "CID at PDU 8+12");
        assertEquals(0x8002, le16(buf, 22), "status at PDU 8+14");
    }

    @Test
    void dataPduLayout() {
        UnsafeBuffer buf = buffer(32);
        buf.setMemory(0, 32, (byte) 0xEE);
        DataPdu p = new DataPdu().wrap(buf, 0);
        assertEquals(24, p.length());
        p.init(PduHeader.TYPE_C2H_DATA, PduHeader.FLAG_DATA_LAST | PduHeader.FLAG_DATA_SUCCESS, 24, 24 + 4096);
        p.cccid(0x0102).ttag(0x0304).datao(0x05060708L).datal(4096);
        assertEquals(0x07, u8(buf, 0));
        assertEquals(0x0C, u8(buf, 1));
        assertEquals(24, u8(buf, 2));
        assertEquals(24, u8(buf, 3));
        assertEquals(24 + 4096, le32(buf, 4));
        assertEquals(0x0102, le16(buf, 8), "CCCID");
        assertEquals(0x0304, le16(buf, 10), "TTAG");
        assertEquals(0x05060708L, le32(buf, 12), "DATAO");
        assertEquals(4096, le32(buf, 16), "DATAL");
        assertEquals(0, le32(buf, 20), "reserved");
        assertEquals(0xEE, u8(buf, 24));

        put16(buf, 8, 0xFFFE);
        put16(buf, 10, 0x8001);
        put32(buf, 12, 0xFFFFFFFFL);
        put32(buf, 16, 0x80000000L);
        assertEquals(0xFFFE, p.cccid());
        assertEquals(0x8001, p.ttag());
        assertEquals(0xFFFFFFFFL, p.datao());
        assertEquals(0x80000000L, p.datal());
    }

    @Test
    void r2tLayout() {
        UnsafeBuffer buf = buffer(32);
        buf.setMemory(0, 32, (byte) 0xEE);
        R2TPdu p = new R2TPdu().wrap(buf, 0);
        assertEquals(24, p.length());
        p.init(PduHeader.FLAG_HDGST, 28).cccid(0x1111).ttag(0x2222).r2to(0x33333333L).r2tl(0x44444444L);
        assertEquals(0x09, u8(buf, 0));
        assertEquals(0x01, u8(buf, 1));
        assertEquals(24, u8(buf, 2));
        assertEquals(0, u8(buf, 3));
        assertEquals(28, le32(buf, 4));
        assertEquals(0x1111, le16(buf, 8), "CCCID");
        assertEquals(0x2222, le16(buf, 10), "TTAG");
        assertEquals(0x33333333L, le32(buf, 12), "R2TO");
        assertEquals(0x44444444L, le32(buf, 16), "R2TL");
        assertEquals(0, le32(buf, 20));

        put16(buf, 8, 7);
        put16(buf, 10, 9);
        put32(buf, 12, 8192);
        put32(buf, 16, 0xF0000000L);
        assertEquals(7, p.cccid());
        assertEquals(9, p.ttag());
        assertEquals(8192, p.r2to());
        assertEquals(0xF0000000L, p.r2tl());
    }
}
