package io.nvmeof.tgt.auth;

import io.nvmeof.protocol.auth.AuthMessages;
import io.nvmeof.protocol.auth.AuthMessages.Challenge;
import io.nvmeof.protocol.auth.AuthMessages.Negotiate;
import io.nvmeof.protocol.auth.AuthMessages.Reply;
import io.nvmeof.protocol.auth.AuthProtocolException;
import io.nvmeof.protocol.auth.DhExchange;
import io.nvmeof.protocol.auth.DhGroup;
import io.nvmeof.protocol.auth.Dhchap;
import io.nvmeof.protocol.auth.DhchapHash;
import java.security.MessageDigest;
import java.security.SecureRandom;

/**
 * The controller's side of DH-HMAC-CHAP on one queue (NVMe Base 2.0, 8.13.5; nvmet's fabrics-cmd-auth.c): the steps
 * Negotiate (host) -> Challenge (controller) -> Reply (host) -> Success1 (controller) -> Success2 (host, only when
 * the host asked the controller to authenticate too). A step out of order, a wrong transaction id or a response that
 * does not match ends the transaction with Failure1, which the next Authentication Receive returns; after it the
 * queue is closed (nvmet ends the whole controller). A Negotiate at any time starts a new transaction: a host
 * re-authenticates that way, and a queue that had authenticated stays so until the new transaction fails.
 *
 * <p>Each transaction takes the host's settings from the {@link HostAuthRegistry} when its Negotiate arrives and keeps
 * them to its end: a key rotated meanwhile (admin API) applies from the host's next transaction on, as in nvmet and
 * SPDK, and a queue that authenticated with the old key keeps serving. A host whose settings were removed cannot start
 * a transaction any more (Failure1): the administrator said it no longer has a secret here, so it cannot prove one.
 *
 * <p>One message at a time: the queue lets one authentication command run at once, and {@link #send} and
 * {@link #receive} are synchronized besides; they run off the poll group (the DH arithmetic).
 */
public final class QueueAuthentication {
    private static final SecureRandom RANDOM = new SecureRandom();

    enum Step { NEGOTIATE, CHALLENGE, REPLY, SUCCESS1, SUCCESS2, FAILURE1, DONE }

    private final HostAuthRegistry settings;
    private final String hostNqn;
    private final String subNqn;
    /** The settings of the transaction in progress, taken at its Negotiate. */
    private HostAuth host;

    private Step step = Step.NEGOTIATE;
    private int tid = -1;
    private DhchapHash hash;
    private DhGroup group;
    private byte[] c1;
    private long s1;
    private DhExchange dh;
    /**
     * The key of a Challenge no Reply has used yet: a new transaction on this queue offers it again rather than
     * generating another (issue 51: Negotiate after Negotiate must not make the target compute a key each time). As
     * nvmet, which keeps one key per controller for all its queues; it is never combined with two host values.
     */
    private DhExchange unanswered;
    private byte[] sessionKey;
    private byte[] c2;
    private long s2;
    private int failure;
    private String failureReason;
    /** Read by the queue's thread for every command: written under this object's lock, published volatile. */
    private volatile boolean authenticated;
    private volatile boolean fatal;
    /** Transactions started on this queue before it authenticated; more than {@link #MAX_UNPROVEN_TRANSACTIONS} fail. */
    private int unprovenTransactions;

    /**
     * Negotiates a queue may start before it authenticates: each costs the target a DH key pair, and a host that knows
     * its secret needs one (the Linux host starts exactly one per queue).
     */
    static final int MAX_UNPROVEN_TRANSACTIONS = 2;

    /**
     * How long a queue may stay connected without authenticating: a host that never starts (or never finishes) holds
     * a connection and a controller for nothing. nvmet allows the Connect's KATO or 120 s per step; a host runs the
     * whole exchange at once, in milliseconds.
     */
    public static final long DEADLINE_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
    private static volatile long deadlineNanos = DEADLINE_NANOS;

    /** Sets the deadline for queues connected from now on (tests shorten it); null restores the default. */
    public static void deadline(java.time.Duration d) {
        deadlineNanos = d == null ? DEADLINE_NANOS : d.toNanos();
    }

    /** The deadline in force. */
    public static long deadlineNanos() { return deadlineNanos; }

    private final long connectedNanos = System.nanoTime();
    private final long deadline = deadlineNanos;

    /** A queue of {@code hostNqn} connected to {@code subNqn}; each transaction reads its settings from {@code settings}. */
    public QueueAuthentication(HostAuthRegistry settings, String hostNqn, String subNqn) {
        this.settings = settings;
        this.hostNqn = hostNqn;
        this.subNqn = subNqn;
    }

    /** Whether the queue is past its {@link #DEADLINE_NANOS} without having authenticated. */
    public boolean overdue(long now) { // authenticated is volatile
        return !authenticated && now - connectedNanos > deadline;
    }

    private volatile boolean closed;

    /** The queue has closed: a step still waiting for its turn is not worth computing. */
    public void queueClosed() { closed = true; }

    public boolean queueIsClosed() { return closed; }

    /** Whether the host proved it holds its secret on this queue (and, when it asked, the controller proved its own). */
    public boolean authenticated() { return authenticated; }

    /** Whether the transaction failed and the queue is to be closed once the Failure1 is out. */
    public boolean fatal() { return fatal; }

    /** Why the last transaction failed, for the log (never a secret), or null. */
    public synchronized String failureReason() { return failureReason; }

    /** The host NQN the queue connected with. */
    public String hostNqn() { return hostNqn; }

    /** An Authentication Send's message, {@code tl} bytes. Protocol failures are not NVMe errors: they become Failure1. */
    public synchronized void send(byte[] m) {
        int type = AuthMessages.type(m);
        int id = AuthMessages.id(m);
        if (step == Step.FAILURE1 || step == Step.DONE && fatal) {
            return; // failed: nothing restarts it on this queue; the next Receive returns the Failure1, then it closes
        }
        try {
            if (type == AuthMessages.TYPE_COMMON && id == AuthMessages.ID_NEGOTIATE) {
                if (!authenticated && ++unprovenTransactions > MAX_UNPROVEN_TRANSACTIONS) {
                    throw new AuthProtocolException(AuthMessages.EXP_FAILED, "more than " + MAX_UNPROVEN_TRANSACTIONS
                            + " transactions started on a queue that has not authenticated");
                }
                negotiate(Negotiate.decode(m));
                return;
            }
            if (type == AuthMessages.TYPE_COMMON && id == AuthMessages.ID_FAILURE2) {
                // The host gives up (it could not verify us, or did not like the challenge).
                fail(AuthMessages.failureExplanation(m), "the host sent Failure2: "
                        + AuthMessages.explanation(AuthMessages.failureExplanation(m)));
                step = Step.DONE;
                fatal = true;
                return;
            }
            if (type != AuthMessages.TYPE_DHCHAP) {
                throw new AuthProtocolException(AuthMessages.EXP_INCORRECT_MESSAGE, "message type " + type + " id " + id);
            }
            boolean reply = id == AuthMessages.ID_REPLY && step == Step.REPLY;
            boolean success2 = id == AuthMessages.ID_SUCCESS2 && step == Step.SUCCESS2;
            if (!reply && !success2) {
                throw new AuthProtocolException(AuthMessages.EXP_INCORRECT_MESSAGE, "message id 0x"
                        + Integer.toHexString(id) + " while expecting " + expected());
            }
            if (AuthMessages.tid(m) != tid) {
                throw new AuthProtocolException(AuthMessages.EXP_INCORRECT_PAYLOAD, "transaction id "
                        + AuthMessages.tid(m) + " where " + tid + " was negotiated");
            }
            if (reply) {
                reply(Reply.decode(m, hash.length()));
            } else {
                authenticated = true;
                step = Step.DONE;
            }
        } catch (AuthProtocolException e) {
            fail(e.explanation(), e.getMessage());
        } catch (IllegalArgumentException e) {
            fail(AuthMessages.EXP_DHGROUP_UNUSABLE, e.getMessage());
        } catch (RuntimeException e) {
            fail(AuthMessages.EXP_FAILED, "internal error: " + e);
        }
    }

    /**
     * An Authentication Receive: the controller's next message (Challenge, Success1 or Failure1), or the Failure1 of
     * a receive that comes out of turn.
     */
    public synchronized byte[] receive() {
        try {
            if (step == Step.CHALLENGE) {
                return challenge();
            }
            if (step == Step.SUCCESS1) {
                return success1();
            }
            if (step != Step.FAILURE1) {
                // nvmet answers a Receive out of turn with FAILED.
                fail(AuthMessages.EXP_FAILED, "Authentication Receive while expecting " + expected());
            }
        } catch (IllegalArgumentException e) {
            fail(AuthMessages.EXP_DHGROUP_UNUSABLE, e.getMessage());
        } catch (RuntimeException e) {
            fail(AuthMessages.EXP_FAILED, "internal error: " + e);
        }
        authenticated = false;
        fatal = true;
        step = Step.DONE;
        return AuthMessages.failure(AuthMessages.ID_FAILURE1, Math.max(tid, 0), failure);
    }

    /** Bytes the next {@link #receive} returns at most, for checking an Authentication Receive's AL. */
    public synchronized int nextReceiveLength() {
        if (step == Step.CHALLENGE) {
            return AuthMessages.DHCHAP_HEADER + hash.length() + (group == DhGroup.NULL ? 0 : group.length());
        }
        if (step == Step.SUCCESS1) {
            return AuthMessages.DHCHAP_HEADER + (c2 != null ? hash.length() : 0);
        }
        return AuthMessages.HEADER;
    }

    private String expected() {
        switch (step) {
            case NEGOTIATE: return "Negotiate";
            case REPLY: return "Reply";
            case SUCCESS2: return "Success2";
            default: return "no message from the host (step " + step + ")";
        }
    }

    private void fail(int explanation, String why) {
        authenticated = false; // a failed re-authentication ends service at once, Failure1 fetched or not
        failure = explanation;
        failureReason = AuthMessages.explanation(explanation) + ": " + why;
        step = Step.FAILURE1;
        sessionKey = null;
        dh = null;
    }

    private void negotiate(Negotiate n) {
        tid = n.tid();
        sessionKey = null;
        dh = null;
        c1 = null;
        c2 = null;
        host = null;
        HostAuth now = settings.lookup(hostNqn);
        if (now == null) {
            throw new AuthProtocolException(AuthMessages.EXP_FAILED, "host " + hostNqn + " has no DH-HMAC-CHAP"
                    + " settings on this target any more (removed by the administrator)");
        }
        if (n.scC() != AuthMessages.SC_C_NONE) {
            throw new AuthProtocolException(AuthMessages.EXP_CONCAT_MISMATCH, "secure channel concatenation (SC_C "
                    + n.scC() + ") asked for; this target does not offer it");
        }
        // The configured hash when the host offers it, else the first the host lists that we know (as nvmet). Chosen
        // in locals: the fields change only once the whole Negotiate is accepted.
        DhchapHash chosenHash = null;
        for (int id : n.hashIds()) {
            if (id == now.hash().id()) {
                chosenHash = now.hash();
            }
        }
        for (int i = 0; chosenHash == null && i < n.hashIds().length; i++) {
            chosenHash = DhchapHash.byId(n.hashIds()[i]);
        }
        if (chosenHash == null) {
            throw new AuthProtocolException(AuthMessages.EXP_HASH_UNUSABLE, "the host offers no hash this target has");
        }
        // The configured group, which the host must offer: unlike nvmet, a host that leaves it out (one that will not
        // do the null group where the target asks for none, or the reverse) is told so now rather than later.
        DhGroup chosenGroup = null;
        for (int id : n.dhGroupIds()) {
            if (id == now.dhGroup().id()) {
                chosenGroup = now.dhGroup();
            }
        }
        if (chosenGroup == null) {
            throw new AuthProtocolException(AuthMessages.EXP_DHGROUP_UNUSABLE, "the host does not offer the DH group "
                    + now.dhGroup().groupName() + " that host " + hostNqn + " is configured for");
        }
        host = now;
        hash = chosenHash;
        group = chosenGroup;
        step = Step.CHALLENGE;
    }

    private byte[] challenge() {
        c1 = new byte[hash.length()];
        RANDOM.nextBytes(c1);
        s1 = Dhchap.nextSequenceNumber();
        byte[] value = new byte[0];
        if (group != DhGroup.NULL) {
            dh = unanswered != null && unanswered.group() == group ? unanswered : DhExchange.generate(group, RANDOM);
            unanswered = dh;
            value = dh.publicValue();
        }
        step = Step.REPLY;
        return new Challenge(tid, hash.id(), group.id(), s1, c1, value).encode();
    }

    private void reply(Reply r) {
        byte[] challenge = c1;
        if (group != DhGroup.NULL) {
            if (r.dhValue().length == 0) {
                throw new AuthProtocolException(AuthMessages.EXP_DHGROUP_UNUSABLE, "Reply without a DH value in group "
                        + group.groupName());
            }
            unanswered = null; // combined with a host value once: the next transaction gets a new key
            sessionKey = dh.sharedSecret(r.dhValue());
            challenge = Dhchap.augmentedChallenge(hash, sessionKey, c1);
        } else if (r.dhValue().length != 0) {
            throw new AuthProtocolException(AuthMessages.EXP_INCORRECT_PAYLOAD, "Reply with a DH value in the null group");
        }
        byte[] expected = Dhchap.hostResponse(hash, host.hostKey().transform(hostNqn), challenge, s1, tid,
                AuthMessages.SC_C_NONE, hostNqn, subNqn);
        if (!MessageDigest.isEqual(expected, r.response())) {
            throw new AuthProtocolException(AuthMessages.EXP_FAILED, "the host's response does not match its secret");
        }
        c1 = null; // one response per challenge: a replayed Reply finds none
        s2 = r.seqnum();
        c2 = r.hostChallenge() != null && s2 != 0 ? r.hostChallenge() : null;
        if (c2 == null) {
            authenticated = true;
        }
        step = Step.SUCCESS1;
    }

    private byte[] success1() {
        byte[] response = null;
        if (c2 != null) {
            if (host.ctrlKey() == null) {
                fail(AuthMessages.EXP_FAILED, "the host asked the controller to authenticate, and host "
                        + hostNqn + " has no controller secret (dhchapCtrlKey)");
                authenticated = false;
                fatal = true;
                step = Step.DONE;
                return AuthMessages.failure(AuthMessages.ID_FAILURE1, tid, failure);
            }
            byte[] challenge = sessionKey != null ? Dhchap.augmentedChallenge(hash, sessionKey, c2) : c2;
            response = Dhchap.controllerResponse(hash, host.ctrlKey().transform(subNqn), challenge, s2, tid, subNqn,
                    hostNqn);
            step = Step.SUCCESS2;
        } else {
            step = Step.DONE;
        }
        sessionKey = null;
        dh = null;
        return AuthMessages.success1(tid, hash.length(), response);
    }
}
