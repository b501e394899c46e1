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

    @Override
    public String toString() {
        return "HostAuth[" + hostNqn + ", " + hash.shortName() + ", " + dhGroup.groupName() + (ctrlKey != null
                ? ", bidirectional" : "") + "]";
    }
}
