package io.nvmeof.cli;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.MultipathNamespace.IoPolicy;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One namespace as the I/O commands use it: through one controller, or through several (one per path) as a
 * {@link MultipathNamespace}. The I/O methods go to whichever it is with one branch, so the callback flavour stays
 * allocation-free as on the handle itself. Closing it closes the multipath namespace and the controllers.
 */
final class ConnectedNamespace implements AutoCloseable {
    private final List<NvmeofController> controllers;
    private final NamespaceHandle single;
    /** Null with one path. */
    private final MultipathNamespace multipath;

    private ConnectedNamespace(List<NvmeofController> controllers, NamespaceHandle single,
                               MultipathNamespace multipath) {
        this.controllers = controllers;
        this.single = single;
        this.multipath = multipath;
    }

    /**
     * Connects each path (one controller each) and opens namespace {@code nsid} through all of them. With several
     * paths, one that cannot be reached now is left out with a warning on stderr and the others go on (as a Linux
     * host's multipath runs on the paths whose `nvme connect` worked); only when none can be reached does it fail,
     * naming each path's reason.
     */
    static ConnectedNamespace connect(List<TransportId> paths, long nsid, ConnectOptions options, IoPolicy policy,
                                      Duration failoverTimeout) {
        List<NvmeofController> controllers = new ArrayList<>();
        try {
            List<String> unreachable = new ArrayList<>();
            for (int p = 0; p < paths.size(); p++) {
                try {
                    controllers.add(NvmeofController.connect(paths.get(p), options));
                } catch (RuntimeException e) {
                    if (paths.size() == 1) {
                        throw e;
                    }
                    String why = "path " + p + " (" + paths.get(p).traddr() + ":" + paths.get(p).trsvcid() + "): "
                            + e.getMessage();
                    unreachable.add(why);
                    System.err.println("nvmeof: " + why + "; going on without it (run again to use it)");
                }
            }
            if (controllers.isEmpty()) {
                throw new IllegalStateException("no path could be connected: " + String.join("; ", unreachable));
            }
            if (paths.size() == 1) {
                return new ConnectedNamespace(controllers, controllers.get(0).namespace(nsid), null);
            }
            List<NamespaceHandle> handles = new ArrayList<>();
            for (NvmeofController c : controllers) {
                handles.add(c.namespace(nsid));
            }
            MultipathNamespace mp = MultipathNamespace.of(handles, policy, failoverTimeout);
            return new ConnectedNamespace(controllers, handles.get(0), mp);
        } catch (RuntimeException e) {
            for (NvmeofController c : controllers) {
                c.close();
            }
            throw e;
        }
    }

    int pathCount() { return controllers.size(); }

    /** Null with one path. */
    MultipathNamespace multipath() { return multipath; }

    List<NvmeofController> controllers() { return controllers; }

    NvmeofController controller(int path) { return controllers.get(path); }

    int blockSize() { return single.blockSize(); }

    long blockCount() { return multipath != null ? multipath.blockCount() : single.blockCount(); }

    int maxBlocksPerIo() { return multipath != null ? multipath.maxBlocksPerIo() : single.maxBlocksPerIo(); }

    /** The most bytes read and write send in one command. */
    static final int CHUNK_BYTES = 1 << 20;

    /**
     * Blocks per command for read and write: at most {@link #CHUNK_BYTES} (and the controller's limit). A
     * controller that reports no MDTS (0: no limit) may still refuse larger commands: Linux's nvmet-tcp (Debian 12's
     * 6.1) fails any command whose data is over 4 MiB (its MAXH2CDATA) with SGL Data Block Invalid, reads too (the
     * initiator now keeps to MAXH2CDATA without MDTS); a file of any size goes in commands of a moderate size.
     */
    int chunkBlocks() {
        return Math.max(1, Math.min(maxBlocksPerIo(), CHUNK_BYTES / blockSize()));
    }

    /** I/O queues over every path. */
    int ioQueueCount() {
        int n = 0;
        for (NvmeofController c : controllers) {
            n += c.ioQueueCount();
        }
        return n;
    }

    /** Whether some path's controller is connected now: a failed I/O may go through it when sent again. */
    boolean anyPathConnected() {
        for (NvmeofController c : controllers) {
            if (c.isConnected()) {
                return true;
            }
        }
        return false;
    }

    /** A buffer every path's controller may send from and receive into (registered with each, for RDMA). */
    ByteBuffer allocateBuffer(int bytes) {
        ByteBuffer b = controllers.get(0).allocateBuffer(bytes);
        for (int p = 1; p < controllers.size(); p++) {
            controllers.get(p).registerBuffer(b);
        }
        return b;
    }

    void read(long lba, int blocks, ByteBuffer dst, IoCallback cb, long context) {
        if (multipath != null) {
            multipath.read(lba, blocks, dst, cb, context);
        } else {
            single.read(lba, blocks, dst, cb, context);
        }
    }

    void write(long lba, int blocks, ByteBuffer src, IoCallback cb, long context) {
        if (multipath != null) {
            multipath.write(lba, blocks, src, cb, context);
        } else {
            single.write(lba, blocks, src, cb, context);
        }
    }

    CompletableFuture<Void> read(long lba, int blocks, ByteBuffer dst) {
        return multipath != null ? multipath.read(lba, blocks, dst) : single.read(lba, blocks, dst);
    }

    CompletableFuture<Void> write(long lba, int blocks, ByteBuffer src) {
        return multipath != null ? multipath.write(lba, blocks, src) : single.write(lba, blocks, src);
    }

    CompletableFuture<Void> flush() {
        return multipath != null ? multipath.flush() : single.flush();
    }

    /** Path {@code p} for output: "127.0.0.1:4420". */
    String pathName(int p) {
        TransportId id = controllers.get(p).transportId();
        return id.traddr().indexOf(':') >= 0 ? "[" + id.traddr() + "]:" + id.trsvcid() : id.traddr() + ":" + id.trsvcid();
    }

    /** Every path's transport counters, for the bench's report (empty where the transport keeps none). */
    String transportStatistics() {
        StringBuilder b = new StringBuilder();
        for (int p = 0; p < controllers.size(); p++) {
            String s = controllers.get(p).transportStatistics();
            if (!s.isEmpty()) {
                b.append(b.length() > 0 ? "; " : "").append(controllers.size() > 1 ? "path " + p + ": " : "").append(s);
            }
        }
        return b.toString();
    }

    @Override
    public void close() {
        if (multipath != null) {
            multipath.close();
        }
        for (NvmeofController c : controllers) {
            c.close();
        }
    }
}
