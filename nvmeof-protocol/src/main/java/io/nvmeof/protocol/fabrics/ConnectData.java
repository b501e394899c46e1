package io.nvmeof.protocol.fabrics;

import io.nvmeof.protocol.Flyweight;

/** The 1024-byte data of a Connect command (NVMe-oF, "Connect Command Data"). */
public final class ConnectData extends Flyweight {
    public static final int LENGTH = 1024;

    public static final int HOSTID = 0;
    public static final int CNTLID = 16;
    public static final int SUBNQN = 256;
    public static final int HOSTNQN = 512;
    public static final int NQN_FIELD = 256;

    /** Controller ID a host sends to ask for a dynamically allocated controller. */
    public static final int CNTLID_DYNAMIC = 0xFFFF;

    @Override
    public int length() {
        return LENGTH;
    }

    public void readHostId(byte[] dst16) { buffer.getBytes(offset + HOSTID, dst16, 0, 16); }
    public ConnectData hostId(byte[] src16) { buffer.putBytes(offset + HOSTID, src16, 0, 16); return this; }

    public int cntlid() { return u16(CNTLID); }
    public ConnectData cntlid(int v) { u16(CNTLID, v); return this; }

    public String subnqn() { return nulString(SUBNQN, NQN_FIELD); }
    public ConnectData subnqn(String v) { nulString(SUBNQN, NQN_FIELD, v); return this; }
    public String hostnqn() { return nulString(HOSTNQN, NQN_FIELD); }
    public ConnectData hostnqn(String v) { nulString(HOSTNQN, NQN_FIELD, v); return this; }

    /** True when the NQN field holds a terminating NUL within its 256 bytes, as the spec requires. */
    public boolean nqnTerminated(int fieldOffset) {
        for (int i = 0; i < NQN_FIELD; i++) {
            if (buffer.getByte(offset + fieldOffset + i) == 0) {
                return true;
            }
        }
        return false;
    }
}
