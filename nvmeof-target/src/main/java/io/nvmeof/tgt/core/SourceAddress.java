package io.nvmeof.tgt.core;

import java.net.InetAddress;
import java.util.HexFormat;

/**
 * What per-source limits count a peer under: the IPv4 address itself, the /64 prefix of an IPv6 one (one machine
 * commonly holds a whole /64, so counting its addresses apart would give it billions of allowances), or
 * {@link #UNKNOWN} where the transport does not know the peer's address.
 */
public final class SourceAddress {
    public static final Object UNKNOWN = "an unknown address";

    private SourceAddress() {
    }

    public static Object of(InetAddress peer) {
        if (peer == null) {
            return UNKNOWN;
        }
        byte[] a = peer.getAddress();
        if (a.length == 16 && !peer.isLoopbackAddress()) {
            return HexFormat.of().formatHex(a, 0, 8).replaceAll("(.{4})(?!$)", "$1:") + "::/64";
        }
        return peer.getHostAddress();
    }
}
