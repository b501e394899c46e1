package io.nvmeof.tgt.live;

import static io.nvmeof.tgt.live.ConfigurationChecks.notFound;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.auth.HostAuth;
import io.nvmeof.tgt.auth.HostSecurity;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import java.util.List;

/**
 * The hosts' security settings on a running target (nvmet's {@code hosts/NQN/dhchap_*}, SPDK's
 * {@code nvmf_subsystem_set_keys} and {@code --psk}): each change is saved with the configuration document before it
 * applies, under the live configuration's lock; what is shown says whether a secret is set, never what it is.
 */
public final class HostSecrets {
    private final NvmeTarget target;
    private final ConfigurationDocument document;
    /** The live configuration's monitor: every change to the document is made holding it. */
    private final Object lock;

    HostSecrets(NvmeTarget target, ConfigurationDocument document, Object lock) {
        this.target = target;
        this.document = document;
        this.lock = lock;
    }

    /**
     * A host's security settings as they may be shown: whether each secret and key is set, never one. Hash and group are
     * the effective ones (the defaults filled in) for a host that must authenticate.
     */
    public record HostAuthenticationView(String nqn, boolean dhchapKeySet, boolean dhchapCtrlKeySet, String dhchapHash,
                                         String dhchapDhGroup, boolean tlsKeySet, String tlsKeyDerivation) {
    }

    /** Every host with security settings (DH-HMAC-CHAP, a TLS key), in the order they were set. */
    public List<HostAuthenticationView> hostAuthentications() {
        synchronized (lock) {
            return document.hosts.values().stream().map(this::view).toList();
        }
    }

    /** One host's security settings (404 when it has none). */
    public HostAuthenticationView hostAuthentication(String hostNqn) {
        synchronized (lock) {
            HostConfig h = document.hosts.get(hostNqn);
            if (h == null) {
                throw notFound("host " + Nqn.display(hostNqn) + " has no security settings (DH-HMAC-CHAP or TLS key)");
            }
            return view(h);
        }
    }

    private HostAuthenticationView view(HostConfig h) {
        HostAuth a = target.core().hostAuth().lookup(h.nqn());
        io.nvmeof.protocol.tls.ConfiguredPsk tls = target.core().tlsKeys().lookup(h.nqn());
        String derivation = tls != null ? tls.derivation().label() : null;
        return a != null ? new HostAuthenticationView(h.nqn(), true, a.ctrlKey() != null, a.hash().shortName(),
                a.dhGroup().groupName(), tls != null, derivation)
                : new HostAuthenticationView(h.nqn(), false, false, null, null, tls != null, derivation);
    }

    /**
     * Sets or replaces (rotates) one host's security settings (DH-HMAC-CHAP, TLS key, or both; a kind the body leaves
     * out entirely is kept as it is), checked as a start checks them. Every Connect, TLS handshake and transaction the host starts
     * from now on uses them; queues that authenticated or shook hands before keep serving, and a transaction in
     * progress finishes with the key it began with (as nvmet and SPDK rotate keys).
     *
     * @throws ConfigurationException INVALID naming the field, never the secret
     */
    public HostAuthenticationView setHostAuthentication(HostConfig body) {
        synchronized (lock) {
            HostConfig given = body == null ? null
                    : ConfigurationDocument.keepingOtherKind(body, document.hosts.get(body.nqn()));
            HostSecurity sec = ConfigurationChecks.checkHostEntry(given);
            String nqn = sec.hostNqn();
            HostConfig entry = ConfigurationDocument.entry(given, sec);
            document.save(document.withHost(nqn, entry));
            boolean rotated = document.hosts.containsKey(nqn);
            sec.apply(target.core().hostAuth(), target.core().tlsKeys());
            document.hosts.put(nqn, entry);
            LiveConfiguration.LOG.info("host {}: security settings {} ({})", Nqn.display(nqn), rotated ? "rotated" : "set", sec.summary());
            return view(entry);
        }
    }

    /**
     * Removes one host's security settings: its next Connect needs no secret, and plain TCP is open to it again. Its
     * queues stay connected; a re-authentication it starts on one of them fails, since it has no secret here any more.
     */
    public void removeHostAuthentication(String hostNqn) {
        synchronized (lock) {
            if (!document.hosts.containsKey(hostNqn)) {
                throw notFound("host " + Nqn.display(hostNqn) + " has no security settings (DH-HMAC-CHAP or TLS key)");
            }
            document.save(document.withHost(hostNqn, null));
            target.core().hostAuth().remove(hostNqn);
            target.core().tlsKeys().set(hostNqn, null);
            target.core().hostIdentities().forget(hostNqn); // it proves nothing any more: its Host IDs are free
            document.hosts.remove(hostNqn);
            LiveConfiguration.LOG.info("host {}: security settings removed; it connects without authenticating", Nqn.display(hostNqn));
        }
    }
}
