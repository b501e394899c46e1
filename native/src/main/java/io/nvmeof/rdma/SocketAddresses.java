package io.nvmeof.rdma;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetSocketAddress;

/** struct sockaddr_in / sockaddr_in6 as bytes, for rdma_bind_addr and rdma_resolve_addr (which copy them). */
final class SocketAddresses {
    static final int AF_INET = 2;
    static final int AF_INET6 = 10;

    private SocketAddresses() {
    }

    static byte[] encode(InetSocketAddress a) {
        if (a.isUnresolved()) {
            throw new IllegalArgumentException("unresolved address: " + a);
        }
        int port = a.getPort();
        if (a.getAddress() instanceof Inet4Address v4) {
            byte[] s = new byte[16];
            s[0] = (byte) AF_INET; // sa_family is host order (little-endian here)
            s[2] = (byte) (port >>> 8); // sin_port is network order
            s[3] = (byte) port;
            System.arraycopy(v4.getAddress(), 0, s, 4, 4);
            return s;
        }
        Inet6Address v6 = (Inet6Address) a.getAddress();
        byte[] s = new byte[28];
        s[0] = (byte) AF_INET6;
        s[2] = (byte) (port >>> 8);
        s[3] = (byte) port;
        System.arraycopy(v6.getAddress(), 0, s, 8, 16);
        int scope = v6.getScopeId();
        s[24] = (byte) scope;
        s[25] = (byte) (scope >>> 8);
        s[26] = (byte) (scope >>> 16);
        s[27] = (byte) (scope >>> 24);
        return s;
    }
}
