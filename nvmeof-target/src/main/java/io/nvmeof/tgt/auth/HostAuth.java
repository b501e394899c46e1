package io.nvmeof.tgt.auth;

import io.nvmeof.protocol.auth.DhGroup;
import io.nvmeof.protocol.auth.DhchapHash;
import io.nvmeof.protocol.auth.DhchapSecret;

/**
 * How one host authenticates: its secret, the controller's secret for bidirectional authentication (null: the host
 * may not ask for it), and the hash and DH group the controller chooses when the host offers them (nvmet's
 * {@code dhchap_hash} and {@code dhchap_dhgroup}).
 */
public record HostAuth(String hostNqn, DhchapSecret hostKey, DhchapSecret ctrlKey, DhchapHash hash, DhGroup dhGroup) {
    public HostAuth {
        if (hostKey == null) {
            throw new IllegalArgumentException("host " + hostNqn + ": authentication needs the host's secret");
        }
        if (hash == null) {
            hash = DhchapHash.SHA256;
        }
        if (dhGroup == null) {
            dhGroup = DhGroup.NULL;
        }
    }

    /** What the target asks of the host, for logs and answers: never a secret ("sha256, group null, both ways"). */
    public String summary() {
        return hash.shortName() + ", group " + dhGroup.groupName() + (ctrlKey != null ? ", both ways" : "");
    }

    /** Whether {@code other} asks exactly the same of the host (secrets compared in constant time). */
    public boolean sameSettingsAs(HostAuth other) {
        return other != null && hostNqn.equals(other.hostNqn) && hostKey.sameAs(other.hostKey)
                && (ctrlKey == null ? other.ctrlKey == null : ctrlKey.sameAs(other.ctrlKey))
                && hash == other.hash && dhGroup == other.dhGroup;
    }

    @Override
    public String toString() {
        return "HostAuth[" + hostNqn + ", " + hash.shortName() + ", " + dhGroup.groupName() + (ctrlKey != null
                ? ", bidirectional" : "") + "]";
    }
}
