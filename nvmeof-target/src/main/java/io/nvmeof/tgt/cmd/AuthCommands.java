package io.nvmeof.tgt.cmd;

import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.auth.QueueAuthentication;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.SubmissionQueue;
import java.util.concurrent.RejectedExecutionException;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Authentication Send and Authentication Receive (Fabrics types 05h and 06h), which carry DH-HMAC-CHAP (Linux
 * nvmet's fabrics-cmd-auth.c). The step itself runs off the poll group ({@link QueueAuthentication} does the
 * arithmetic, milliseconds in the larger DH groups) and the command completes back on the queue's thread.
 */
public final class AuthCommands {
    private static final Logger LOG = LoggerFactory.getLogger(AuthCommands.class);

    /**
     * The largest message accepted or returned: a Reply in ffdhe8192 with SHA-512 is 1,168 bytes and a Negotiate of
     * one descriptor 72; the Linux host's buffer is 4 KiB. Longer is refused before any buffer is taken.
     */
    public static final int MAX_MESSAGE = 8192;

    private AuthCommands() {
    }

    /** Checks an Authentication Send or Receive and sets up its data transfer. */
    static int parse(Request req, boolean send) {
        FabricsCommand f = req.fabrics;
        SubmissionQueue sq = req.sq();
        if (!sq.connected()) {
            return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
        }
        if (f.secp() != FabricsCommand.SECP_NVME_AUTH) {
            req.errorLocation = FabricsCommand.SECP;
            return Status.INVALID_FIELD | Status.DNR;
        }
        if (f.spsp0() != FabricsCommand.SPSP_NVME_AUTH) {
            req.errorLocation = FabricsCommand.SPSP0;
            return Status.INVALID_FIELD | Status.DNR;
        }
        if (f.spsp1() != FabricsCommand.SPSP_NVME_AUTH) {
            req.errorLocation = FabricsCommand.SPSP1;
            return Status.INVALID_FIELD | Status.DNR;
        }
        long length = f.authLength();
        if (length == 0 || length > MAX_MESSAGE) {
            req.errorLocation = FabricsCommand.AUTH_LENGTH;
            return Status.INVALID_FIELD | Status.DNR;
        }
        if (sq.authentication() == null) {
            // The host need not authenticate (no secret configured for it): nvmet refuses the same way.
            req.errorLocation = FabricsCommand.FCTYPE;
            return Status.INVALID_FIELD | Status.DNR;
        }
        if (sq.authenticationBusy()) {
            // One at a time, from parse to completion: a Send waiting for its data (R2T) holds the queue's turn too.
            return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
        }
        sq.authenticationBusy(true);
        req.holdsAuthentication = true; // let go when the command completes, whichever way
        req.transferLength = (int) length;
        req.direction = send ? Request.DIR_HOST_TO_CONTROLLER : Request.DIR_CONTROLLER_TO_HOST;
        req.execute = send ? AuthCommands::executeSend : AuthCommands::executeReceive;
        return Status.SUCCESS;
    }

    static void executeSend(Request req) {
        SubmissionQueue sq = req.sq();
        QueueAuthentication auth = sq.authentication();
        byte[] message = new byte[req.transferLength];
        req.dataView().getBytes(0, message);
        offPollGroup(req, () -> {
            auth.send(message);
            return null;
        });
    }

    static void executeReceive(Request req) {
        QueueAuthentication auth = req.sq().authentication();
        if (req.transferLength < auth.nextReceiveLength()) {
            // Too small for the next message: refused with nothing changed (nvmet answers an internal error).
            req.errorLocation = FabricsCommand.AUTH_LENGTH;
            req.complete(Status.INVALID_FIELD | Status.DNR);
            return;
        }
        offPollGroup(req, auth::receive);
    }

    /** Runs {@code step} off the poll group; back on the queue's thread, copies its message out and completes. */
    private static void offPollGroup(Request req, java.util.function.Supplier<byte[]> step) {
        SubmissionQueue sq = req.sq();
        QueueAuthentication auth = sq.authentication();
        boolean wasAuthenticated = auth.authenticated();
        Runnable work = () -> {
            if (auth.queueIsClosed()) {
                return; // closed while the step waited its turn: nobody is left to answer (see AuthenticationWork)
            }
            byte[] out;
            boolean threw = false;
            try {
                out = step.get();
            } catch (RuntimeException e) {
                LOG.error("authentication step on queue {} failed", sq.qid(), e);
                out = null;
                threw = true;
            }
            byte[] message = out;
            boolean failedInside = threw;
            try {
                sq.transport().execute(() -> finish(req, auth, message, wasAuthenticated, failedInside));
            } catch (RejectedExecutionException e) {
                LOG.debug("queue {} closed during an authentication step", sq.qid());
            }
        };
        if (!sq.core().executeAuthentication(sq.transport().peerAddress(), work)) {
            // Too many steps from this address (or all) wait: nothing was done, the host may send it again.
            req.complete(Status.COMMAND_INTERRUPTED);
        }
    }

    private static void finish(Request req, QueueAuthentication auth, byte[] message, boolean wasAuthenticated,
                               boolean failedInside) {
        if (!req.inUse || !req.holdsAuthentication) {
            return; // the queue closed while the step ran: the request is gone, and so is its host
        }
        if (failedInside) {
            if (req.direction == Request.DIR_CONTROLLER_TO_HOST) {
                req.dataView().setMemory(0, req.transferLength, (byte) 0);
            }
            req.closeQueueAfterResponse = true;
            req.complete(Status.INTERNAL);
            return;
        }
        SubmissionQueue sq = req.sq();
        io.nvmeof.tgt.core.Controller c = sq.controller();
        if (c != null && (auth.fatal() || (auth.authenticated() && !wasAuthenticated))) {
            c.subsystem().countAuthentication(!auth.fatal());
        }
        if (c != null && auth.authenticated() && !wasAuthenticated) {
            if (sq.qid() != 0 && !c.attachAuthenticated(sq)) {
                // Another queue authenticated for this QID first (or the controller went): this one serves nothing.
                LOG.warn("queue {} of controller {} authenticated after another took its QID; closed", sq.qid(),
                        c.cntlid());
                req.closeQueueAfterResponse = true;
            } else if (!sq.promote()) {
                // It reserved only what authenticating takes (the untrusted allowance); its real buffers do not fit.
                LOG.warn("queue {} of controller {} authenticated, but the target's memory limit is held by other"
                        + " connections ({} bytes in use); closed, the host may reconnect", sq.qid(), c.cntlid(),
                        sq.core().memory().used());
                req.closeQueueAfterResponse = true;
            } else if (sq.qid() == 0) {
                sq.core().hostProven(c);
            }
        }
        if (req.direction == Request.DIR_CONTROLLER_TO_HOST) {
            // The buffer is pooled: every byte the host gets is written here, the message or zeros.
            UnsafeBuffer out = req.dataView();
            out.setMemory(0, req.transferLength, (byte) 0);
            if (message == null) {
                req.closeQueueAfterResponse = true;
                req.complete(Status.INTERNAL); // a step that failed inside: the host gets nothing of the buffer
                return;
            }
            out.putBytes(0, message, 0, Math.min(message.length, req.transferLength));
        }
        if (auth.fatal()) {
            if (message != null) {
                // The Failure1 goes out, then the queue closes (nvmet ends the controller).
                LOG.warn("host {} failed to authenticate on queue {} from {}: {}", Nqn.display(auth.hostNqn()),
                        sq.qid(), sq.transport().peer(), auth.failureReason());
            }
            req.closeQueueAfterResponse = true;
        } else if (message != null && auth.authenticated()) {
            LOG.debug("host {} authenticated on queue {}", Nqn.display(auth.hostNqn()), sq.qid());
        }
        req.complete(Status.SUCCESS);
    }
}
