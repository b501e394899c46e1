package io.nvmeof.protocol.auth;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The DH-HMAC-CHAP messages carried by Authentication Send and Receive (NVMe Base 2.0, 8.13.5; Linux's
 * {@code struct nvmf_auth_dhchap_*}): encoders and checked decoders. Every message starts with AUTH_TYPE (byte 0),
 * AUTH_ID (1), two reserved bytes and the transaction id T_ID (4-5, little-endian). A decoder refuses what breaks
 * the layout with {@link AuthProtocolException} carrying the failure reason to send back.
 */
public final class AuthMessages {
    private AuthMessages() {
    }

    /** AUTH_TYPE: the common messages (Negotiate, Failure1, Failure2) and the DH-HMAC-CHAP ones. */
    public static final int TYPE_COMMON = 0x00;
    public static final int TYPE_DHCHAP = 0x01;

    public static final int ID_NEGOTIATE = 0x00;
    public static final int ID_CHALLENGE = 0x01;
    public static final int ID_REPLY = 0x02;
    public static final int ID_SUCCESS1 = 0x03;
    public static final int ID_SUCCESS2 = 0x04;
    public static final int ID_FAILURE2 = 0xF0;
    public static final int ID_FAILURE1 = 0xF1;

    /** The protocol descriptor's AUTHID of DH-HMAC-CHAP. */
    public static final int AUTHID_DHCHAP = 0x01;
    /** SC_C: no secure channel concatenation. */
    public static final int SC_C_NONE = 0x00;

    /** REASON CODE of Failure1/2: authentication failed (the only one defined). */
    public static final int RESCODE_FAILED = 0x01;
    /** REASON CODE EXPLANATION values. */
    public static final int EXP_FAILED = 0x01;
    public static final int EXP_NOT_USABLE = 0x02;
    public static final int EXP_CONCAT_MISMATCH = 0x03;
    public static final int EXP_HASH_UNUSABLE = 0x04;
    public static final int EXP_DHGROUP_UNUSABLE = 0x05;
    public static final int EXP_INCORRECT_PAYLOAD = 0x06;
    public static final int EXP_INCORRECT_MESSAGE = 0x07;

    /** The common header's length; Failure messages are this long. */
    public static final int HEADER = 8;
    /** Challenge, Reply, Success1 and Success2 carry a 16-byte header. */
    public static final int DHCHAP_HEADER = 16;
    /** One protocol descriptor of a Negotiate message: AUTHID, reserved, HALEN, DHLEN and 60 identifiers. */
    public static final int DESCRIPTOR = 64;
    /** The identifier list holds 30 hash ids then 30 DH group ids. */
    public static final int MAX_IDS = 30;

    /** "Success1, with the controller's response": RVALID bit 0. */
    public static final int RVALID = 0x01;

    public static String explanation(int exp) {
        switch (exp) {
            case EXP_FAILED: return "authentication failed";
            case EXP_NOT_USABLE: return "authentication protocol not usable";
            case EXP_CONCAT_MISMATCH: return "secure channel concatenation mismatch";
            case EXP_HASH_UNUSABLE: return "hash function not usable";
            case EXP_DHGROUP_UNUSABLE: return "DH group not usable";
            case EXP_INCORRECT_PAYLOAD: return "incorrect payload";
            case EXP_INCORRECT_MESSAGE: return "incorrect protocol message";
            default: return "reason 0x" + Integer.toHexString(exp);
        }
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static void header(ByteBuffer b, int type, int id, int tid) {
        b.put(0, (byte) type).put(1, (byte) id).putShort(4, (short) tid);
    }

    /** AUTH_TYPE of a message of at least one byte; -1 when empty. */
    public static int type(byte[] m) { return m.length < 1 ? -1 : m[0] & 0xFF; }

    /** AUTH_ID; -1 when shorter than two bytes. */
    public static int id(byte[] m) { return m.length < 2 ? -1 : m[1] & 0xFF; }

    /** T_ID; -1 when shorter than the common header. */
    public static int tid(byte[] m) { return m.length < HEADER ? -1 : le(m).getShort(4) & 0xFFFF; }

    // ---------------------------------------------------------------------------------------------- Negotiate

    /** A host's Negotiate: its transaction id, SC_C, and the hashes and DH groups it offers, in its order. */
    public record Negotiate(int tid, int scC, int[] hashIds, int[] dhGroupIds) {
        public byte[] encode() {
            byte[] m = new byte[HEADER + DESCRIPTOR];
            ByteBuffer b = le(m);
            header(b, TYPE_COMMON, ID_NEGOTIATE, tid);
            m[6] = (byte) scC;
            m[7] = 1; // NAPD: one protocol descriptor
            m[8] = AUTHID_DHCHAP;
            m[10] = (byte) hashIds.length;
            m[11] = (byte) dhGroupIds.length;
            for (int i = 0; i < hashIds.length; i++) {
                m[12 + i] = (byte) hashIds[i];
            }
            for (int i = 0; i < dhGroupIds.length; i++) {
                m[12 + MAX_IDS + i] = (byte) dhGroupIds[i];
            }
            return m;
        }

        /**
         * Decodes a Negotiate as nvmet checks it: one protocol descriptor, DH-HMAC-CHAP's, at most 30 ids of each kind.
         */
        public static Negotiate decode(byte[] m) {
            if (m.length < HEADER + DESCRIPTOR) {
                throw new AuthProtocolException(EXP_INCORRECT_PAYLOAD, "Negotiate of " + m.length + " bytes; it has at"
                        + " least " + (HEADER + DESCRIPTOR));
            }
            int napd = m[7] & 0xFF;
            if (napd != 1) {
                // nvmet answers HASH_UNUSABLE for anything but one descriptor, as here.
                throw new AuthProtocolException(EXP_HASH_UNUSABLE, "Negotiate with " + napd
                        + " protocol descriptors; one (DH-HMAC-CHAP) is supported");
            }
            int authId = m[8] & 0xFF;
            int halen = m[10] & 0xFF;
            int dhlen = m[11] & 0xFF;
            if (authId != AUTHID_DHCHAP || halen > MAX_IDS || dhlen > MAX_IDS) {
                throw new AuthProtocolException(EXP_INCORRECT_PAYLOAD, "Negotiate descriptor with AUTHID " + authId
                        + ", HALEN " + halen + ", DHLEN " + dhlen);
            }
            int[] hashes = new int[halen];
            for (int i = 0; i < halen; i++) {
                hashes[i] = m[12 + i] & 0xFF;
            }
            int[] groups = new int[dhlen];
            for (int i = 0; i < dhlen; i++) {
                groups[i] = m[12 + MAX_IDS + i] & 0xFF;
            }
            return new Negotiate(AuthMessages.tid(m), m[6] & 0xFF, hashes, groups);
        }

        @Override
        public String toString() {
            return "Negotiate[tid=" + tid + ", sc_c=" + scC + ", hashes=" + Arrays.toString(hashIds) + ", groups="
                    + Arrays.toString(dhGroupIds) + "]";
        }
    }

    // ---------------------------------------------------------------------------------------------- Challenge

    /** The controller's Challenge: hash, group, sequence number S1, challenge C1 and its DH public value. */
    public record Challenge(int tid, int hashId, int dhGroupId, long seqnum, byte[] challenge, byte[] dhValue) {
        public byte[] encode() {
            int hl = challenge.length;
            byte[] m = new byte[DHCHAP_HEADER + hl + dhValue.length];
            ByteBuffer b = le(m);
            header(b, TYPE_DHCHAP, ID_CHALLENGE, tid);
            m[6] = (byte) hl;
            m[8] = (byte) hashId;
            m[9] = (byte) dhGroupId;
            b.putShort(10, (short) dhValue.length);
            b.putInt(12, (int) seqnum);
            System.arraycopy(challenge, 0, m, DHCHAP_HEADER, hl);
            System.arraycopy(dhValue, 0, m, DHCHAP_HEADER + hl, dhValue.length);
            return m;
        }

        public static Challenge decode(byte[] m) {
            if (m.length < DHCHAP_HEADER) {
                throw new AuthProtocolException(EXP_INCORRECT_PAYLOAD, "Challenge of " + m.length + " bytes");
            }
            ByteBuffer b = le(m);
            int hl = m[6] & 0xFF;
            int dhvlen = b.getShort(10) & 0xFFFF;
            if (DHCHAP_HEADER + hl + dhvlen > m.length) {
                throw new AuthProtocolException(EXP_INCORRECT_PAYLOAD, "Challenge with HL " + hl + " and DHVLEN "
                        + dhvlen + " in " + m.length + " bytes");
            }
            return new Challenge(AuthMessages.tid(m), m[8] & 0xFF, m[9] & 0xFF, b.getInt(12) & 0xFFFF_FFFFL,
                    Arrays.copyOfRange(m, DHCHAP_HEADER, DHCHAP_HEADER + hl),
                    Arrays.copyOfRange(m, DHCHAP_HEADER + hl, DHCHAP_HEADER + hl + dhvlen));
        }
    }

    // ---------------------------------------------------------------------------------------------- Reply

    /**
     * The host's Reply: its response R1, its own challenge C2 when it asks the controller to authenticate (null
     * otherwise; the field is sent zero-filled, as Linux sends it), sequence number S2 and its DH public value.
     */
    public record Reply(int tid, byte[] response, byte[] hostChallenge, long seqnum, byte[] dhValue) {
        public byte[] encode() {
            int hl = response.length;
            byte[] m = new byte[DHCHAP_HEADER + 2 * hl + dhValue.length];
            ByteBuffer b = le(m);
            header(b, TYPE_DHCHAP, ID_REPLY, tid);
            m[6] = (byte) hl;
            m[8] = (byte) (hostChallenge != null ? 1 : 0);
            b.putShort(10, (short) dhValue.length);
            b.putInt(12, (int) seqnum);
            System.arraycopy(response, 0, m, DHCHAP_HEADER, hl);
            if (hostChallenge != null) {
                System.arraycopy(hostChallenge, 0, m, DHCHAP_HEADER + hl, hl);
            }
            System.arraycopy(dhValue, 0, m, DHCHAP_HEADER + 2 * hl, dhValue.length);
            return m;
        }

        /** Decodes a Reply whose response is {@code hl} bytes (the negotiated hash's length). */
        public static Reply decode(byte[] m, int expectedHl) {
            if (m.length < DHCHAP_HEADER) {
                throw new AuthProtocolException(EXP_INCORRECT_PAYLOAD, "Reply of " + m.length + " bytes");
            }
            ByteBuffer b = le(m);
            int hl = m[6] & 0xFF;
            int dhvlen = b.getShort(10) & 0xFFFF;
            if (DHCHAP_HEADER + 2 * hl + dhvlen > m.length) {
                throw new AuthProtocolException(EXP_INCORRECT_PAYLOAD, "Reply with HL " + hl + " and DHVLEN " + dhvlen
                        + " in " + m.length + " bytes");
            }
            if (hl != expectedHl) {
                throw new AuthProtocolException(EXP_FAILED, "Reply with HL " + hl + "; the negotiated hash gives "
                        + expectedHl);
            }
            boolean cvalid = (m[8] & 1) != 0;
            return new Reply(AuthMessages.tid(m), Arrays.copyOfRange(m, DHCHAP_HEADER, DHCHAP_HEADER + hl),
                    cvalid ? Arrays.copyOfRange(m, DHCHAP_HEADER + hl, DHCHAP_HEADER + 2 * hl) : null,
                    b.getInt(12) & 0xFFFF_FFFFL,
                    Arrays.copyOfRange(m, DHCHAP_HEADER + 2 * hl, DHCHAP_HEADER + 2 * hl + dhvlen));
        }
    }

    // ---------------------------------------------------------------------------------------------- Success, Failure

    /** Success1, with the controller's response R2 when the host asked for it (null otherwise). */
    public static byte[] success1(int tid, int hl, byte[] ctrlResponse) {
        byte[] m = new byte[DHCHAP_HEADER + (ctrlResponse != null ? ctrlResponse.length : 0)];
        header(le(m), TYPE_DHCHAP, ID_SUCCESS1, tid);
        m[6] = (byte) hl;
        if (ctrlResponse != null) {
            m[8] = RVALID;
            System.arraycopy(ctrlResponse, 0, m, DHCHAP_HEADER, ctrlResponse.length);
        }
        return m;
    }

    /** The controller's response carried by a Success1, or null when RVALID is clear. */
    public static byte[] success1Response(byte[] m) {
        if (m.length < DHCHAP_HEADER) {
            throw new AuthProtocolException(EXP_INCORRECT_PAYLOAD, "Success1 of " + m.length + " bytes");
        }
        int hl = m[6] & 0xFF;
        if ((m[8] & RVALID) == 0) {
            return null;
        }
        if (DHCHAP_HEADER + hl > m.length) {
            throw new AuthProtocolException(EXP_INCORRECT_PAYLOAD, "Success1 with HL " + hl + " in " + m.length + " bytes");
        }
        return Arrays.copyOfRange(m, DHCHAP_HEADER, DHCHAP_HEADER + hl);
    }

    public static byte[] success2(int tid) {
        byte[] m = new byte[DHCHAP_HEADER];
        header(le(m), TYPE_DHCHAP, ID_SUCCESS2, tid);
        return m;
    }

    /** Failure1 (controller to host) or Failure2 (host to controller) with a reason code explanation. */
    public static byte[] failure(int id, int tid, int explanation) {
        byte[] m = new byte[HEADER];
        header(le(m), TYPE_COMMON, id, tid);
        m[6] = RESCODE_FAILED;
        m[7] = (byte) explanation;
        return m;
    }

    /** The reason code explanation of a Failure message (byte 7). */
    public static int failureExplanation(byte[] m) {
        return m.length < HEADER ? EXP_INCORRECT_PAYLOAD : m[7] & 0xFF;
    }
}
