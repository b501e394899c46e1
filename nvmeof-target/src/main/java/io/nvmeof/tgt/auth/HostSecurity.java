package io.nvmeof.tgt.auth;

import io.nvmeof.protocol.tls.ConfiguredPsk;

/**
 * What one host must prove, checked: its DH-HMAC-CHAP settings, its configured TLS PSK, or both (each may be null, not
 * both).
 */
public record HostSecurity(String hostNqn, HostAuth dhchap, ConfiguredPsk tls) {
    public HostSecurity {
        if (dhchap == null && tls == null) {
            throw new IllegalArgumentException("a host's security settings need a DH-HMAC-CHAP secret or a TLS key");
        }
    }

    /** Whether {@code live} (this host's settings now; null when none) asks exactly the same (secrets in constant time). */
    public boolean sameAs(HostAuth liveDhchap, ConfiguredPsk liveTls) {
        boolean sameDhchap = dhchap == null ? liveDhchap == null : dhchap.sameSettingsAs(liveDhchap);
        boolean sameTls = tls == null ? liveTls == null : tls.sameAs(liveTls);
        return sameDhchap && sameTls;
    }

    /** For logs and audit lines: what is set, never a secret. */
    public String summary() {
        String d = dhchap == null ? "" : "DH-HMAC-CHAP " + dhchap.summary();
        String t = tls == null ? "" : "TLS PSK (" + tls.hash().digest() + ", " + tls.derivation().label() + ")";
        return d.isEmpty() ? t : t.isEmpty() ? d : d + "; " + t;
    }

    /** Puts these settings in force: every Connect and (re-)authentication from now on uses them. */
    public void apply(HostAuthRegistry dhchapRegistry, TlsKeys tlsKeys) {
        if (dhchap != null) {
            dhchapRegistry.put(dhchap);
        } else {
            dhchapRegistry.remove(hostNqn);
        }
        tlsKeys.set(hostNqn, tls);
    }
}
