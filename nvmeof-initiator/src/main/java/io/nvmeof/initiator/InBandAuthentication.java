package io.nvmeof.initiator;

import io.nvmeof.protocol.auth.AuthMessages;
import io.nvmeof.protocol.auth.AuthMessages.Challenge;
import io.nvmeof.protocol.auth.AuthMessages.Negotiate;
import io.nvmeof.protocol.auth.AuthMessages.Reply;
import io.nvmeof.protocol.auth.AuthProtocolException;
import io.nvmeof.protocol.auth.DhExchange;
import io.nvmeof.protocol.auth.DhGroup;
import io.nvmeof.protocol.auth.Dhchap;
import io.nvmeof.protocol.auth.DhchapHash;
import io.nvmeof.protocol.auth.DhchapSecret;
import java.security.MessageDigest;
import java.security.SecureRandom;

/**
 * The host's side of DH-HMAC-CHAP on one queue, as the Linux host runs it (drivers/nvme/host/auth.c): Negotiate
 * offering SHA-256/384/512 and the null and ffdhe groups, the controller's Challenge answered with a Reply (with the
 * host's own challenge when a controller secret is set), Success1 checked (the controller's response, when asked
 * for, compared in constant time), Success2. A controller that fails any check is told with Failure2 and the
 * connect fails, saying why.
 */
final class InBandAuthentication {
    /** The queue's Authentication Send and Receive. */
    interface Channel {
        void send(byte[] message);

        byte[] receive(int allocationLength);
    }

    private static final SecureRandom RANDOM = new SecureRandom();
    /** The Linux host's buffer for a controller's message. */
    static final int RECEIVE_LENGTH = 4096;
    static final int[] HASHES = {DhchapHash.SHA256.id(), DhchapHash.SHA384.id(), DhchapHash.SHA512.id()};
    static final int[] GROUPS = {DhGroup.NULL.id(), DhGroup.FFDHE2048.id(), DhGroup.FFDHE3072.id(),
            DhGroup.FFDHE4096.id(), DhGroup.FFDHE6144.id(), DhGroup.FFDHE8192.id()};

    private InBandAuthentication() {
    }

    /**
     * Authenticates one queue.
     *
     * @param tid the transaction id (the Linux host counts them per controller)
     * @throws NvmeofException when the controller refuses the host or the host refuses the controller
     */
    static void run(Channel ch, String what, ConnectOptions options, String subNqn, int tid) {
        DhchapSecret key = options.dhchapSecret();
        if (key == null) {
            throw new NvmeofException(what + ": the controller requires DH-HMAC-CHAP authentication and no secret was"
                    + " given; set ConnectOptions.dhchapSecret (nvme connect --dhchap-secret) to the host's secret",
                    ErrorKind.NVME_STATUS_DO_NOT_RETRY);
        }
        String hostNqn = options.hostNqn();
        ch.send(new Negotiate(tid, AuthMessages.SC_C_NONE, HASHES, GROUPS).encode());
        byte[] m = ch.receive(RECEIVE_LENGTH);
        refused(what, m);
        int failure = AuthMessages.EXP_FAILED;
        String why;
        try {
            Challenge c = Challenge.decode(m);
            expect(m, AuthMessages.ID_CHALLENGE, tid);
            DhchapHash hash = DhchapHash.byId(c.hashId());
            if (hash == null || c.challenge().length != hash.length()) {
                throw new AuthProtocolException(AuthMessages.EXP_HASH_UNUSABLE, "hash id " + c.hashId() + " with HL "
                        + c.challenge().length);
            }
            DhGroup group = DhGroup.byId(c.dhGroupId());
            if (group == null || (group == DhGroup.NULL) != (c.dhValue().length == 0)) {
                throw new AuthProtocolException(AuthMessages.EXP_DHGROUP_UNUSABLE, "DH group id " + c.dhGroupId()
                        + " with a " + c.dhValue().length + "-byte value");
            }
            byte[] challenge = c.challenge();
            byte[] dhValue = new byte[0];
            byte[] session = null;
            if (group != DhGroup.NULL) {
                DhExchange mine = DhExchange.generate(group, RANDOM);
                dhValue = mine.publicValue();
                session = mine.sharedSecret(c.dhValue());
                challenge = Dhchap.augmentedChallenge(hash, session, challenge);
            }
            byte[] response = Dhchap.hostResponse(hash, key.transform(hostNqn), challenge, c.seqnum(), tid,
                    AuthMessages.SC_C_NONE, hostNqn, subNqn);
            byte[] c2 = null;
            long s2 = 0;
            DhchapSecret ctrlKey = options.dhchapCtrlSecret();
            if (ctrlKey != null) {
                c2 = new byte[hash.length()];
                RANDOM.nextBytes(c2);
                s2 = Dhchap.nextSequenceNumber();
            }
            ch.send(new Reply(tid, response, c2, s2, dhValue).encode());
            byte[] s1 = ch.receive(RECEIVE_LENGTH);
            refused(what, s1);
            expect(s1, AuthMessages.ID_SUCCESS1, tid);
            if (ctrlKey == null) {
                return;
            }
            byte[] r2 = AuthMessages.success1Response(s1);
            if (r2 == null) {
                // The Linux host lets this pass; a host that asked for proof and got none has none.
                throw new AuthProtocolException(AuthMessages.EXP_FAILED, "the controller did not answer the host's"
                        + " challenge (no RVALID in Success1)");
            }
            byte[] cc = session != null ? Dhchap.augmentedChallenge(hash, session, c2) : c2;
            byte[] expected = Dhchap.controllerResponse(hash, ctrlKey.transform(subNqn), cc, s2, tid, subNqn, hostNqn);
            if (!MessageDigest.isEqual(expected, r2)) {
                throw new AuthProtocolException(AuthMessages.EXP_FAILED, "the controller's response does not match the"
                        + " controller secret: it is not the controller it claims to be, or the secret differs");
            }
            ch.send(AuthMessages.success2(tid));
            return;
        } catch (AuthProtocolException e) {
            failure = e.explanation();
            why = AuthMessages.explanation(e.explanation()) + ": " + e.getMessage();
        } catch (IllegalArgumentException e) {
            failure = AuthMessages.EXP_DHGROUP_UNUSABLE;
            why = e.getMessage();
        }
        try {
            ch.send(AuthMessages.failure(AuthMessages.ID_FAILURE2, tid, failure));
        } catch (RuntimeException ignored) {
            // the controller may have closed the queue already; the reason below is what matters
        }
        throw new NvmeofException(what + ": DH-HMAC-CHAP failed on the host's side (" + why + ")", ErrorKind.NVME_STATUS_DO_NOT_RETRY);
    }

    private static void refused(String what, byte[] m) {
        if (AuthMessages.type(m) == AuthMessages.TYPE_COMMON && AuthMessages.id(m) == AuthMessages.ID_FAILURE1) {
            throw new NvmeofException(what + ": the controller refused the host's authentication ("
                    + AuthMessages.explanation(AuthMessages.failureExplanation(m)) + "); check the host's secret"
                    + " (--dhchap-secret) against the one the target has for " + "this host NQN", ErrorKind.NVME_STATUS_DO_NOT_RETRY);
        }
    }

    private static void expect(byte[] m, int id, int tid) {
        if (AuthMessages.type(m) != AuthMessages.TYPE_DHCHAP || AuthMessages.id(m) != id) {
            throw new AuthProtocolException(AuthMessages.EXP_INCORRECT_MESSAGE, "message type " + AuthMessages.type(m)
                    + " id " + AuthMessages.id(m) + " where id " + id + " was due");
        }
        if (AuthMessages.tid(m) != tid) {
            throw new AuthProtocolException(AuthMessages.EXP_INCORRECT_PAYLOAD, "transaction id " + AuthMessages.tid(m)
                    + " where " + tid + " was sent");
        }
    }
}
