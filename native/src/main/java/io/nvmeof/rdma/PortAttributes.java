package io.nvmeof.rdma;

/**
 * A port's state (4 = ACTIVE), MTUs as enum ibv_mtu (1 = 256 ... 5 = 4096), link layer (1 InfiniBand, 2 Ethernet).
 */
public record PortAttributes(int state, int maxMtu, int activeMtu, int linkLayer, int gidTableLength,
                             long maxMessageSize) {
    public static final int STATE_ACTIVE = 4;

    public boolean isActive() {
        return state == STATE_ACTIVE;
    }

    /** The active MTU in bytes. */
    public int activeMtuBytes() {
        return activeMtu >= 1 && activeMtu <= 5 ? 128 << activeMtu : 0;
    }

    static PortAttributes of(long[] v) {
        return new PortAttributes((int) v[0], (int) v[1], (int) v[2], (int) v[3], (int) v[4], v[5]);
    }
}
