package io.nvmeof.rdma;

/** Memory registration access flags (enum ibv_access_flags). */
public final class Access {
    public static final int LOCAL_WRITE = 1;
    public static final int REMOTE_WRITE = 2;
    public static final int REMOTE_READ = 4;
    /** What an NVMe/RDMA data buffer needs: the peer READs from it and WRITEs into it. */
    public static final int LOCAL_AND_REMOTE = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;

    private Access() {
    }
}
