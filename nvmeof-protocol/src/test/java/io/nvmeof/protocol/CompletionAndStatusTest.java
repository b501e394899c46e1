package io.nvmeof.protocol;

import static io.nvmeof.protocol.Raw.*;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.LinkedHashMap;
import java.util.Map;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** Completion queue entry (16 bytes) and the status field, NVMe Base "Common Completion Queue Entry". */
class CompletionAndStatusTest {
    private final UnsafeBuffer buf = buffer(16);
    private final Completion cqe = new Completion().wrap(buf, 0);

    /** Every status constant of {@link Status}, by name, excluding the flag and SCT helpers. */
    static Map<String, Integer> statusConstants() throws IllegalAccessException {
        Map<String, Integer> out = new LinkedHashMap<>();
        for (Field f : Status.class.getDeclaredFields()) {
            int m = f.getModifiers();
            if (!Modifier.isPublic(m) || !Modifier.isStatic(m) || !Modifier.isFinal(m) || f.getType() != int.class) {
                continue;
            }
            String n = f.getName();
            if (n.equals("DNR") || n.equals("MORE") || n.startsWith("SCT_") || n.startsWith("SET_")) {
                continue;
            }
            out.put(n, f.getInt(null));
        }
        return out;
    }

    @Test
    void fieldsAtSpecOffsets() {
        assertEquals(16, cqe.length());
        cqe.dw0(0x11223344).dw1(0x55667788).sqhd(0xA1B2).sqid(0x0C0D).cid(0xE0F0).status(Status.INVALID_FIELD);
        assertEquals(0x11223344L, le32(buf, 0));
        assertEquals(0x55667788L, le32(buf, 4));
        assertEquals(0xA1B2, le16(buf, 8));
        assertEquals(0x0C0D, le16(buf, 10));
        assertEquals(0xE0F0, le16(buf, 12));
        assertEquals(0x0004, le16(buf, 14), "SC 2 lands at bits 8:1");
        assertEquals(0x44, u8(buf, 0));
        assertEquals(0xB2, u8(buf, 8));
        assertEquals(0xF0, u8(buf, 12));
    }

    @Test
    void decodeHandBuilt() {
        put32(buf, 0, 0xDEADBEEFL);
        put32(buf, 4, 0x01020304L);
        put16(buf, 8, 31);
        put16(buf, 10, 2);
        put16(buf, 12, 0x77);
        put16(buf, 14, 0x8000 | 0x1 << 9 | 0x84 << 1 | 1); // DNR, SCT 1, SC 0x84, phase 1
        assertEquals(0xDEADBEEF, cqe.dw0());
        assertEquals(0x01020304, cqe.dw1());
        assertEquals(0x01020304_DEADBEEFL, cqe.result64());
        assertEquals(31, cqe.sqhd());
        assertEquals(2, cqe.sqid());
        assertEquals(0x77, cqe.cid());
        assertEquals(1, cqe.phase());
        assertEquals(0x8000 | 0x200 | 0x108 | 1, cqe.statusField());
        int s = cqe.status();
        assertEquals(Status.CONNECT_INVALID_HOST, Status.code(s));
        assertTrue(Status.dnr(s));
        assertFalse(Status.more(s));
        assertEquals(1, Status.sct(s));
        assertEquals(0x84, Status.sc(s));
        assertFalse(Status.isSuccess(s));
    }

    @Test
    void result64SpansDw0AndDw1() {
        cqe.result64(0x0011223344556677L);
        assertEquals(0x44556677L, le32(buf, 0));
        assertEquals(0x00112233L, le32(buf, 4));
    }

    @Test
    void statusKeepsPhaseBit() {
        put16(buf, 14, 1);
        cqe.status(Status.LBA_RANGE);
        assertEquals(0x80 << 1 | 1, le16(buf, 14));
        assertEquals(1, cqe.phase());
        put16(buf, 14, 0);
        cqe.status(Status.SUCCESS);
        assertEquals(0, le16(buf, 14));
        assertTrue(Status.isSuccess(cqe.status()));
    }

    @Test
    void everyStatusConstantEncodesScAndSct() throws Exception {
        Map<String, Integer> all = statusConstants();
        assertTrue(all.size() >= 40, "found " + all.size());
        for (Map.Entry<String, Integer> e : all.entrySet()) {
            int status = e.getValue();
            String n = e.getKey();
            buf.setMemory(0, 16, (byte) 0);
            cqe.status(status);
            int raw = le16(buf, 14);
            assertEquals(0, raw & 1, n + ": phase untouched");
            assertEquals(status & 0xFF, raw >> 1 & 0xFF, n + ": SC at raw bits 8:1");
            assertEquals(status >> 8 & 7, raw >> 9 & 7, n + ": SCT at raw bits 11:9");
            assertEquals(0, raw & 0xF000, n + ": no CRD/More/DNR");
            assertEquals(status, cqe.status(), n + ": round trip");
            assertEquals(status, Status.code(cqe.status()));
            assertEquals(Status.of(Status.sct(status), Status.sc(status)), status, n);
            assertTrue(status >= 0 && status <= 0x7FF, n);
            String name = Status.name(status);
            assertFalse(name.startsWith("SCT "), n + " has only a generic name: " + name);
            assertTrue(name.contains(String.format("0x%03x", status)), name);
        }
    }

    @Test
    void everyStatusConstantRoundTripsWithFlags() throws Exception {
        for (Map.Entry<String, Integer> e : statusConstants().entrySet()) {
            int status = e.getValue() | Status.DNR | Status.MORE;
            put16(buf, 14, 1);
            cqe.status(status);
            int raw = le16(buf, 14);
            assertEquals(1, raw >> 15 & 1, e.getKey() + ": DNR raw bit 15");
            assertEquals(1, raw >> 14 & 1, e.getKey() + ": More raw bit 14");
            assertEquals(1, raw & 1);
            assertEquals(status, cqe.status());
            assertEquals(e.getValue().intValue(), Status.code(cqe.status()));
            assertTrue(Status.name(status).contains("DNR"));
        }
    }

    @Test
    void dnrAndMoreBits() {
        cqe.status(Status.DNR);
        assertEquals(0x8000, le16(buf, 14));
        cqe.status(Status.MORE);
        assertEquals(0x4000, le16(buf, 14));
        put16(buf, 14, 0x8000);
        assertTrue(Status.dnr(cqe.status()));
        assertFalse(Status.more(cqe.status()));
        put16(buf, 14, 0x4000);
        assertTrue(Status.more(cqe.status()));
        assertFalse(Status.dnr(cqe.status()));
    }

    @Test
    void wellKnownValues() {
        assertEquals(1, Status.sct(Status.CONNECT_INVALID_HOST));
        assertEquals(0x84, Status.sc(Status.CONNECT_INVALID_HOST));
        assertEquals(0, Status.sct(Status.LBA_RANGE));
        assertEquals(0x80, Status.sc(Status.LBA_RANGE));
        assertEquals(2, Status.sct(Status.COMPARE_FAILED));
        assertEquals(0x85, Status.sc(Status.COMPARE_FAILED));
        assertEquals(0, Status.sct(Status.INVALID_FIELD));
        assertEquals(2, Status.sc(Status.INVALID_FIELD));
        assertEquals(0, Status.SCT_GENERIC);
        assertEquals(1, Status.SCT_COMMAND_SPECIFIC);
        assertEquals(2, Status.SCT_MEDIA);
        assertEquals(3, Status.SCT_PATH);
    }

    @Test
    void specValuesOfEachStatus() {
        // NVMe Base, "Generic Command Status Values"
        assertEquals(0x00, Status.SUCCESS);
        assertEquals(0x01, Status.INVALID_OPCODE);
        assertEquals(0x03, Status.CMDID_CONFLICT);
        assertEquals(0x04, Status.DATA_TRANSFER_ERROR);
        assertEquals(0x06, Status.INTERNAL);
        assertEquals(0x07, Status.ABORT_REQUESTED);
        assertEquals(0x08, Status.ABORT_SQ_DELETED);
        assertEquals(0x0B, Status.INVALID_NAMESPACE);
        assertEquals(0x0C, Status.COMMAND_SEQUENCE_ERROR);
        assertEquals(0x0D, Status.SGL_INVALID_LAST);
        assertEquals(0x0E, Status.SGL_INVALID_COUNT);
        assertEquals(0x0F, Status.SGL_INVALID_DATA_LENGTH);
        assertEquals(0x10, Status.SGL_INVALID_METADATA_LENGTH);
        assertEquals(0x11, Status.SGL_INVALID_TYPE);
        assertEquals(0x16, Status.SGL_INVALID_OFFSET);
        assertEquals(0x18, Status.HOST_ID_INCONSISTENT);
        assertEquals(0x19, Status.KEEP_ALIVE_EXPIRED);
        assertEquals(0x1A, Status.KEEP_ALIVE_INVALID);
        assertEquals(0x22, Status.TRANSIENT_TRANSPORT_ERROR);
        assertEquals(0x81, Status.CAPACITY_EXCEEDED);
        assertEquals(0x82, Status.NAMESPACE_NOT_READY);
        // "Command Specific Status Values" (SCT 1)
        assertEquals(0x100, Status.INVALID_CQ, "Completion Queue Invalid is SC 00h");
        assertEquals(0x101, Status.INVALID_QID, "Invalid Queue Identifier is SC 01h");
        assertEquals(0x102, Status.INVALID_QUEUE_SIZE, "Invalid Queue Size is SC 02h");
        assertEquals(0x103, Status.ABORT_LIMIT, "Abort Command Limit Exceeded is SC 03h");
        assertEquals(0x105, Status.ASYNC_LIMIT);
        assertEquals(0x109, Status.INVALID_LOG_PAGE);
        assertEquals(0x10D, Status.FEATURE_NOT_SAVEABLE);
        assertEquals(0x10E, Status.FEATURE_NOT_CHANGEABLE);
        assertEquals(0x10F, Status.FEATURE_NOT_PER_NAMESPACE);
        assertEquals(0x180, Status.CONNECT_INCOMPATIBLE_FORMAT);
        assertEquals(0x181, Status.CONNECT_CONTROLLER_BUSY);
        assertEquals(0x182, Status.CONNECT_INVALID_PARAMETERS);
        assertEquals(0x183, Status.CONNECT_RESTART_DISCOVERY);
        assertEquals(0x184, Status.CONNECT_INVALID_HOST);
        assertEquals(0x180, Status.CONFLICTING_ATTRIBUTES);
        // Media and data integrity (SCT 2), path (SCT 3)
        assertEquals(0x280, Status.WRITE_FAULT);
        assertEquals(0x281, Status.UNRECOVERED_READ_ERROR);
        assertEquals(0x286, Status.ACCESS_DENIED);
        assertEquals(0x300, Status.INTERNAL_PATH_ERROR);
    }

    @Test
    void nameFormatsAndUnknownCodes() {
        assertEquals("CONNECT_INVALID_HOST (0x184)", Status.name(Status.CONNECT_INVALID_HOST));
        // Command-specific codes overlap between command sets: 0x183 after Write Zeroes is not a Connect status.
        assertEquals("ONCS_NOT_SUPPORTED (0x183)", Status.name(0x183, Status.SET_IO));
        assertEquals("CONNECT_RESTART_DISC (0x183)", Status.name(0x183, Status.SET_CONNECT));
        assertTrue(Status.name(0x183, Status.SET_ADMIN).startsWith("SCT 1 SC 0x83"));
        assertEquals("INVALID_FIELD (0x002, DNR)", Status.name(Status.INVALID_FIELD | Status.DNR));
        assertTrue(Status.name(0x17).startsWith("SCT 0 SC 0x17"), Status.name(0x17));
        assertTrue(Status.name(0x7FF).startsWith("SCT 7 SC 0xff"));
    }
}
