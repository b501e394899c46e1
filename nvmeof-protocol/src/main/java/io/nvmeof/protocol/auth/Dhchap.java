package io.nvmeof.protocol.auth;

import java.nio.charset.StandardCharsets;

/**
 * The responses of DH-HMAC-CHAP (NVMe Base 2.0, 8.13.5.2), as the Linux kernel's host and nvmet compute them:
 *
 * <pre>
 *   R1 = HMAC(Kh, C1' || S1 || T_ID || SC_C || "HostHost" || hostnqn || 0 || subnqn)
 *   R2 = HMAC(Kc, C2' || S2 || T_ID || 0    || "Controller" || subnqn || 0 || hostnqn)
 * </pre>
 *
 * with S little-endian 32 bits, T_ID little-endian 16 bits, Kh and Kc the transformed host and controller secrets
 * ({@link DhchapSecret#transform}), and C' the challenge itself, or with a DH group HMAC(H(g^xy mod p), C).
 */
public final class Dhchap {
    private static final byte[] HOST_HOST = "HostHost".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONTROLLER = "Controller".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ZERO = {0};

    /** One counter for the process, host and controller sides alike, as the kernel's nvme_auth_get_seqnum. */
    private static final java.util.concurrent.atomic.AtomicInteger SEQNUM =
            new java.util.concurrent.atomic.AtomicInteger(new java.security.SecureRandom().nextInt());

    private Dhchap() {
    }

    /** The next sequence number (S1 or S2): random start, incremented, never 0 (which means "none" in a Reply). */
    public static long nextSequenceNumber() {
        int s;
        do {
            s = SEQNUM.incrementAndGet();
        } while (s == 0);
        return s & 0xFFFF_FFFFL;
    }

    /** The host's response R1 to the controller's challenge (already augmented when a DH group is in use). */
    public static byte[] hostResponse(DhchapHash hash, byte[] hostKey, byte[] challenge, long seqnum, int tid, int scC,
                                      String hostNqn, String subNqn) {
        return hash.hmac(hostKey, challenge, le32(seqnum), le16(tid), new byte[] {(byte) scC}, HOST_HOST,
                ascii(hostNqn), ZERO, ascii(subNqn));
    }

    /** The controller's response R2 to the host's challenge (already augmented when a DH group is in use). */
    public static byte[] controllerResponse(DhchapHash hash, byte[] ctrlKey, byte[] challenge, long seqnum, int tid,
                                            String subNqn, String hostNqn) {
        return hash.hmac(ctrlKey, challenge, le32(seqnum), le16(tid), ZERO, CONTROLLER, ascii(subNqn), ZERO,
                ascii(hostNqn));
    }

    /** HMAC(H(sessionKey), challenge): the challenge as both sides use it once they share a DH secret. */
    public static byte[] augmentedChallenge(DhchapHash hash, byte[] sessionKey, byte[] challenge) {
        return hash.hmac(hash.digest(sessionKey), challenge);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] le32(long v) {
        return new byte[] {(byte) v, (byte) (v >>> 8), (byte) (v >>> 16), (byte) (v >>> 24)};
    }

    private static byte[] le16(int v) {
        return new byte[] {(byte) v, (byte) (v >>> 8)};
    }
}
