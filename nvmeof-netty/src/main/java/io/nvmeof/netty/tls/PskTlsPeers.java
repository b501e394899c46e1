package io.nvmeof.netty.tls;

import java.io.IOException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Vector;
import org.bouncycastle.tls.AbstractTlsClient;
import org.bouncycastle.tls.AbstractTlsServer;
import org.bouncycastle.tls.AlertDescription;
import org.bouncycastle.tls.BasicTlsPSKExternal;
import org.bouncycastle.tls.CipherSuite;
import org.bouncycastle.tls.NamedGroup;
import org.bouncycastle.tls.PRFAlgorithm;
import org.bouncycastle.tls.ProtocolVersion;
import org.bouncycastle.tls.PskIdentity;
import org.bouncycastle.tls.TlsAuthentication;
import org.bouncycastle.tls.TlsCredentials;
import org.bouncycastle.tls.TlsFatalAlert;
import org.bouncycastle.tls.TlsPSKExternal;
import org.bouncycastle.tls.crypto.TlsCrypto;
import org.bouncycastle.tls.crypto.impl.jcajce.JcaTlsCryptoProvider;

/**
 * The two ends of a TLS 1.3 connection authenticated by an external PSK alone, as NVMe/TCP uses it (TP 8011): TLS 1.3
 * only, the two cipher suites the specification names, (EC)DHE with the PSK (psk_dhe_ke), no certificates.
 */
final class PskTlsPeers {
    private PskTlsPeers() {
    }

    static final int[] CIPHER_SUITES = {CipherSuite.TLS_AES_128_GCM_SHA256, CipherSuite.TLS_AES_256_GCM_SHA384};
    /** Key exchange groups a server takes (psk_dhe_ke). */
    static final int[] GROUPS = {NamedGroup.x25519, NamedGroup.secp256r1, NamedGroup.secp384r1};
    /** Offered PSK identities a server considers. */
    static final int MAX_IDENTITIES = 4;

    /**
     * One crypto provider for every connection (it holds no per-connection state): the JDK's (JCA), whose AES-GCM the
     * JIT compiles to the CPU's AES and carry-less multiply instructions. BouncyCastle's own pure-Java AES-GCM cost the
     * target 54 us of CPU per 4 KiB read (27x fewer IOPS than plain TCP); see docs/performance.md.
     */
    static final TlsCrypto CRYPTO = new JcaTlsCryptoProvider().create(new SecureRandom());

    static TlsPSKExternal external(TlsCrypto crypto, ExternalPsk psk) {
        return new BasicTlsPSKExternal(psk.identity(), crypto.createSecret(psk.key()),
                psk.sha384() ? PRFAlgorithm.tls13_hkdf_sha384 : PRFAlgorithm.tls13_hkdf_sha256);
    }

    /** The server: the key comes from {@link ExternalPskLookup}; a client without a known identity is refused. */
    static final class Server extends AbstractTlsServer {
        private final ExternalPskLookup lookup;
        private final TlsPskHandler handler;

        Server(TlsCrypto crypto, ExternalPskLookup lookup, TlsPskHandler handler) {
            super(crypto);
            this.lookup = lookup;
            this.handler = handler;
        }

        @Override
        protected ProtocolVersion[] getSupportedVersions() {
            return ProtocolVersion.TLSv13.only();
        }

        @Override
        protected int[] getSupportedCipherSuites() {
            return CIPHER_SUITES.clone();
        }

        /**
         * Only the cheap (EC)DHE groups: a client picks the group among ours, and a finite-field group's key exchange
         * costs the poll group milliseconds.
         */
        @Override
        public int[] getSupportedGroups() {
            return GROUPS.clone();
        }

        /**
         * Called after the PSK was chosen and before any key exchange: a client that offered no PSK we have a key for
         * is refused here, so it costs the poll group no key agreement (BouncyCastle would otherwise run one, answer
         * with a ServerHello, and fail only when it looks for a certificate).
         */
        @Override
        public void processClientExtensions(java.util.Hashtable clientExtensions) throws IOException {
            if (handler.selected == null) {
                if (handler.refusal == null) {
                    handler.refusal = "the client offered no PSK (NVMe/TCP's TLS uses pre-shared keys only)";
                }
                throw new TlsFatalAlert(AlertDescription.handshake_failure, handler.refusal);
            }
            super.processClientExtensions(clientExtensions);
        }

        @Override
        public TlsPSKExternal getExternalPSK(Vector identities) throws IOException {
            // A few identities at most are looked at: each costs a key derivation, and a host offers one or two.
            List<byte[]> offered = new ArrayList<>(Math.min(identities.size(), MAX_IDENTITIES));
            for (Object o : identities) {
                if (offered.size() == MAX_IDENTITIES) {
                    break;
                }
                offered.add(((PskIdentity) o).getIdentity());
            }
            ExternalPsk psk = lookup.find(offered);
            if (psk == null) {
                handler.refusal = "no key for the PSK identities offered (" + TlsPskHandler.describe(offered) + ")";
                throw new TlsFatalAlert(AlertDescription.unknown_psk_identity);
            }
            handler.selected = psk;
            return external(getCrypto(), psk);
        }

        @Override
        public TlsCredentials getCredentials() throws IOException {
            // Only reached when no PSK was agreed: NVMe/TCP uses no certificates.
            throw new TlsFatalAlert(AlertDescription.handshake_failure, "an external PSK is required");
        }

        @Override
        public void notifyHandshakeComplete() {
            handler.handshakeComplete();
        }

        @Override
        public void notifyAlertRaised(short level, short description, String message, Throwable cause) {
            handler.alert(true, description, message);
            if (handler.refusal == null && description == AlertDescription.decrypt_error && handler.selected != null) {
                handler.refusal = "the PSK binder for identity " + TlsPskHandler.describe(
                        List.of(handler.selected.identity())) + " does not verify: the client's key is not ours"
                        + " (another key, or one derived another way)";
            } else if (handler.refusal == null && description == AlertDescription.unexpected_message
                    && handler.selected == null) {
                handler.refusal = "what the client sent is not a TLS handshake (plain NVMe/TCP to a listener that"
                        + " requires TLS?)";
            }
        }

        @Override
        public void notifyAlertReceived(short level, short description) {
            handler.alert(false, description, null);
        }
    }

    /** The client: offers one external PSK. */
    static final class Client extends AbstractTlsClient {
        private final ExternalPsk psk;
        private final TlsPskHandler handler;

        Client(TlsCrypto crypto, ExternalPsk psk, TlsPskHandler handler) {
            super(crypto);
            this.psk = psk;
            this.handler = handler;
        }

        @Override
        protected ProtocolVersion[] getSupportedVersions() {
            return ProtocolVersion.TLSv13.only();
        }

        @Override
        protected int[] getSupportedCipherSuites() {
            return new int[] {psk.sha384() ? CipherSuite.TLS_AES_256_GCM_SHA384 : CipherSuite.TLS_AES_128_GCM_SHA256};
        }

        @Override
        public Vector getExternalPSKs() {
            Vector<TlsPSKExternal> v = new Vector<>();
            v.add(external(getCrypto(), psk));
            return v;
        }

        @Override
        public TlsAuthentication getAuthentication() throws IOException {
            // Only reached when the server did not take the PSK and sent a certificate instead.
            throw new TlsFatalAlert(AlertDescription.handshake_failure, "the server did not accept the PSK");
        }

        @Override
        public void notifyHandshakeComplete() {
            handler.selected = psk;
            handler.handshakeComplete();
        }

        @Override
        public void notifyAlertRaised(short level, short description, String message, Throwable cause) {
            handler.alert(true, description, message);
        }

        @Override
        public void notifyAlertReceived(short level, short description) {
            handler.alert(false, description, null);
        }
    }
}
