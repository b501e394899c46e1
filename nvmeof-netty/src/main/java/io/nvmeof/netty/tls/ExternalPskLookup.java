package io.nvmeof.netty.tls;

import java.util.List;

/** The server's side of external PSKs: which of the identities a client offers it has a key for. */
@FunctionalInterface
public interface ExternalPskLookup {
    /**
     * The key for one of {@code offered} (in the client's order of preference), or null when none is known: the
     * handshake then fails (unknown_psk_identity). Called on the connection's event loop, once per handshake.
     */
    ExternalPsk find(List<byte[]> offered);
}
