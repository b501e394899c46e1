package io.nvmeof.tgt.auth;

import io.nvmeof.netty.tls.ExternalPsk;
import io.nvmeof.netty.tls.ExternalPskLookup;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.tls.ConfiguredPsk;
import io.nvmeof.protocol.tls.PskIdentity;
import io.nvmeof.protocol.tls.TlsPskDerivation;
import io.nvmeof.protocol.tls.TlsPskHash;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The hosts' configured TLS PSKs (NVMe/TCP), by host NQN. A listener with TLS finds the key for a ClientHello here:
 * the identity names the host and the subsystem ({@code NVMe0R01 <hostnqn> <subnqn>}, or version 1 with a digest),
 * and the TLS PSK is derived from the host's configured key for them. A host listed here must use TLS: its Connect
 * over plain TCP is refused, and over TLS only with the NQNs its identity named.
 */
public final class TlsKeys implements ExternalPskLookup {
    private final Map<String, ConfiguredPsk> keys = new ConcurrentHashMap<>();

    /**
     * Checks every entry's key and derivation and only then takes them all; a bad entry changes nothing.
     *
     * @throws IllegalArgumentException naming the host and the field, never the key
     */
    public void load(List<HostConfig> entries) {
        if (entries == null) {
            return;
        }
        Map<String, ConfiguredPsk> parsed = new HashMap<>();
        for (HostConfig h : entries) {
            ConfiguredPsk k = parse(h);
            if (k != null) {
                parsed.put(h.nqn(), k);
            }
        }
        keys.putAll(parsed);
    }

    /** Sets, replaces or (null) removes {@code hostNqn}'s key; connections already made keep theirs. */
    public void set(String hostNqn, ConfiguredPsk key) {
        if (key == null) {
            keys.remove(hostNqn);
        } else {
            keys.put(hostNqn, key);
        }
    }

    /** One entry's key checked; null when it has none. */
    public static ConfiguredPsk parse(HostConfig h) {
        String who = "host " + Nqn.display(h.nqn());
        if (h.tlsKey() == null) {
            if (h.tlsKeyDerivation() != null) {
                throw new IllegalArgumentException(who + ": tlsKeyDerivation is given but no tlsKey");
            }
            return null;
        }
        try {
            return ConfiguredPsk.parse(h.tlsKey()).derivedAs(TlsPskDerivation.parse(h.tlsKeyDerivation()));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(who + ": tlsKey: " + e.getMessage(), e);
        }
    }

    /** {@code hostNqn}'s configured key, or null. */
    public ConfiguredPsk lookup(String hostNqn) {
        return keys.get(hostNqn);
    }

    /** Whether {@code hostNqn} has a key, and so must connect over TLS. */
    public boolean has(String hostNqn) {
        return keys.containsKey(hostNqn);
    }

    /** The first offered identity that names a host with a key from which its TLS PSK derives. */
    @Override
    public ExternalPsk find(List<byte[]> offered) {
        for (byte[] raw : offered) {
            PskIdentity id = PskIdentity.parse(raw);
            if (id == null || id.hostNqn().length() > Nqn.MAX_LENGTH || id.subsystemNqn().length() > Nqn.MAX_LENGTH) {
                continue;
            }
            ConfiguredPsk key = keys.get(id.hostNqn());
            if (key == null) {
                continue;
            }
            byte[] psk;
            try {
                psk = key.tlsPsk(id);
            } catch (IllegalArgumentException e) {
                continue; // NQNs too long for a standard derivation's context
            }
            if (psk != null) {
                try {
                    return new ExternalPsk(raw, psk, id.hash() == TlsPskHash.SHA384);
                } finally {
                    Arrays.fill(psk, (byte) 0);
                }
            }
        }
        return null;
    }
}
