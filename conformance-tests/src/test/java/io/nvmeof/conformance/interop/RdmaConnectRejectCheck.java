package io.nvmeof.conformance.interop;

import io.nvmeof.protocol.rdma.RdmaCmReject;
import io.nvmeof.protocol.rdma.RdmaCmRequest;
import io.nvmeof.rdma.CmEvent;
import io.nvmeof.rdma.CmEventChannel;
import io.nvmeof.rdma.CmEventType;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.CompletionQueue;
import io.nvmeof.rdma.ConnectionParameters;
import io.nvmeof.rdma.ProtectionDomain;
import io.nvmeof.rdma.QueuePairConfig;
import java.net.InetSocketAddress;
import java.util.Arrays;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Malformed NVMe/RDMA connect requests against a running target over real RDMA CM (Soft-RoCE in the guest): each must
 * be rejected with the NVMe/RDMA reject status the transport specification assigns, and the target must go on serving.
 * Prints PASS/FAIL lines; exits non-zero on failure. Usage: {@code RdmaConnectRejectCheck ADDRESS PORT}.
 */
public final class RdmaConnectRejectCheck {
    public static void main(String[] args) throws Exception {
        InetSocketAddress target = new InetSocketAddress(args[0], Integer.parseInt(args[1]));
        int failed = 0;
        int passed = 0;
        Object[][] cases = {
            // A short private data length cannot be sent over RoCE: RDMA CM pads a connect request's private data
            // to 56 bytes. RdmaCmTest covers that check.
            {"RECFMT 1", request(1, 0, 32, 31), 32, RdmaCmReject.STS_INVALID_RECFMT},
            {"QID beyond the I/O queues served", request(0, 9999, 32, 31), 32, RdmaCmReject.STS_INVALID_QID},
            {"admin HSQSIZE beyond 32", request(0, 0, 300, 299), 32, RdmaCmReject.STS_INVALID_HSQSIZE},
            // An I/O HSQSIZE beyond MQES is clamped, not rejected, as SPDK does (RdmaCmTest covers it).
            {"HRQSIZE 0", request(0, 1, 0, 31), 32, RdmaCmReject.STS_INVALID_HRQSIZE},
        };
        for (Object[] c : cases) {
            String name = (String) c[0];
            try {
                int sts = attempt(target, Arrays.copyOf((byte[]) c[1], (Integer) c[2]));
                if (sts == (Integer) c[3]) {
                    passed++;
                    System.out.println("PASS rejected with '" + RdmaCmReject.stsName(sts) + "': " + name);
                } else {
                    failed++;
                    System.out.println("FAIL " + name + ": reject status " + sts + ", expected " + c[3]);
                }
            } catch (Throwable e) {
                failed++;
                System.out.println("FAIL " + name + ": " + e);
            }
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static byte[] request(int recfmt, int qid, int hrqsize, int hsqsize) {
        byte[] b = new byte[32];
        new RdmaCmRequest().<RdmaCmRequest>wrap(new UnsafeBuffer(b), 0).recfmt(recfmt).qid(qid).hrqsize(hrqsize).hsqsize(hsqsize);
        return b;
    }

    /** Connects with the given private data; returns the reject status, or throws if not rejected. */
    static int attempt(InetSocketAddress target, byte[] privateData) throws Exception {
        try (CmEventChannel ch = CmEventChannel.create()) {
            CmId id = ch.createId();
            id.resolve(target, 5000);
            ProtectionDomain pd = id.device().allocateProtectionDomain();
            CompletionQueue cq = id.device().createCompletionQueue(16, null, 0);
            try {
                id.createQueuePair(pd, QueuePairConfig.of(cq, 4, 4));
                id.connect(ConnectionParameters.forConnect(privateData, 16, 16));
                CmEvent ev = ch.poll(15000);
                if (ev == null || ev.type() != CmEventType.REJECTED) {
                    throw new AssertionError("expected REJECTED, got " + ev);
                }
                byte[] rej = ev.privateData();
                if (rej.length < RdmaCmReject.LENGTH) {
                    throw new AssertionError("reject without NVMe/RDMA private data: " + Arrays.toString(rej));
                }
                RdmaCmReject r = new RdmaCmReject().wrap(new UnsafeBuffer(rej), 0);
                return r.sts();
            } finally {
                id.close(); // the queue pair first, then what it used
                cq.close();
                pd.close();
            }
        }
    }
}
