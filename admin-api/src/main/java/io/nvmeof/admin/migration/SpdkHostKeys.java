package io.nvmeof.admin.migration;

import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.tgt.auth.HostAuthRegistry;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The hosts' DH-HMAC-CHAP keys and TLS PSKs of an SPDK save_config document on import: the {@code keyring}
 * subsystem's {@code keyring_file_add_key} calls name files, and {@code nvmf_subsystem_add_host}'s {@code dhchap_key},
 * {@code dhchap_ctrlr_key} and {@code psk} name those keys (an older SPDK's {@code psk} names the file itself). Each key a host uses is read from its file ({@link KeyFiles.Reader}) and
 * becomes the host's entry in our {@code hosts}. SPDK keeps keys per subsystem and host; here a host has one setting
 * for every subsystem, so a host given different keys on two subsystems is refused, and one given keys on one
 * subsystem only is said to authenticate on all of them. SPDK sets no hash or group per host: ours take the defaults.
 */
final class SpdkHostKeys {
    /** One host's key names and where they were first given. */
    private record HostKeyNames(String key, String ctrlKey, String psk, String label) {
    }

    private final ImportReport notMapped;
    private final KeyFiles.Reader files;
    /** keyring_file_add_key calls by key name: their path. */
    private final Map<String, JsonAt> keyring = new LinkedHashMap<>();
    /** Secrets read so far, by key name; each file is read once. */
    private final Map<String, String> secrets = new HashMap<>();
    private final Map<String, HostKeyNames> hosts = new LinkedHashMap<>();
    /** Hosts added to a subsystem without keys: labels by host NQN. */
    private final Map<String, Set<String>> withoutKeys = new LinkedHashMap<>();

    SpdkHostKeys(ImportReport notMapped, KeyFiles.Reader files) {
        this.notMapped = notMapped;
        this.files = files;
    }

    /** A call of the {@code keyring} subsystem. */
    void readKeyringCall(SpdkCall call) {
        if (!call.method().equals("keyring_file_add_key")) {
            notMapped.add("keyring: " + call.method() + ": "
                    + (call.method().startsWith("keyring_linux") ? "keys in the Linux kernel keyring cannot be read"
                    + " here; a host key named from it is refused" : "no equivalent here") + "; ignored");
            return;
        }
        String name = call.text("name");
        String label = "keyring_file_add_key(" + name + ")";
        if (keyring.containsKey(name)) {
            throw new IllegalArgumentException(label + ": key " + name + " is added twice");
        }
        for (String key : call.params().fieldNames()) {
            if (!key.equals("name") && !key.equals("path")) {
                notMapped.add(label + "." + key + "=" + call.params().field(key).display()
                        + ": no equivalent here; ignored");
            }
        }
        keyring.put(name, call.params().field("path"));
    }

    /** The keys an {@code nvmf_subsystem_add_host} call gives the host, if any ({@code label} names the call). */
    void readHost(SpdkCall call, String host, String label) {
        String key = keyName(call.params().field("dhchap_key"), label);
        String ctrlKey = keyName(call.params().field("dhchap_ctrlr_key"), label);
        String psk = keyName(call.params().field("psk"), label);
        if (psk != null && !psk.startsWith("/") && !keyring.containsKey(psk)) {
            // A PSK of the kernel's keyring (keyring_linux) or of a keyring the document leaves out: not readable here.
            notMapped.securityLost(label + ".psk: key " + psk + " is not in the document's keyring (a Linux kernel"
                    + " keyring key cannot be read here): the host would connect without TLS; give it its TLS key"
                    + " with PUT /api/v1/hosts/{hostnqn} (tlsKey) after the import");
            psk = null;
        }
        if (key == null && ctrlKey == null && psk == null) {
            withoutKeys.computeIfAbsent(host, h -> new LinkedHashSet<>()).add(label);
            return;
        }
        HostKeyNames given = new HostKeyNames(key, ctrlKey, psk, label);
        HostKeyNames first = hosts.putIfAbsent(host, given);
        if (first != null && !(Objects.equals(secret(first.key(), first.label()), secret(key, label))
                && Objects.equals(secret(first.ctrlKey(), first.label()), secret(ctrlKey, label))
                && Objects.equals(secret(first.psk(), first.label()), secret(psk, label)))) {
            throw new IllegalArgumentException(label + ": host " + host + " has other keys than in "
                    + first.label() + "; this target keeps one setting per host for all subsystems: give the host the"
                    + " same keys everywhere, or import the subsystems one at a time and set its keys after");
        }
    }

    /** A key name; a DHHC-1 secret written where SPDK names a key is refused without repeating it. */
    private static String keyName(JsonAt at, String label) {
        if (!at.present()) {
            return null;
        }
        if (!at.node().isTextual() || at.node().textValue().isBlank()) {
            throw new IllegalArgumentException(label + "." + leaf(at) + " must name a key of SPDK's keyring");
        }
        String name = at.node().textValue();
        if (name.startsWith("DHHC-1:") || name.startsWith("NVMeTLSkey-")) {
            throw new IllegalArgumentException(label + "." + leaf(at) + " holds a secret itself where SPDK names a"
                    + " key of its keyring (keyring_file_add_key); the secret is not repeated here");
        }
        return name;
    }

    private static String leaf(JsonAt at) {
        return at.path().substring(at.path().lastIndexOf('.') + 1);
    }

    /** The secret of key {@code name} (null: none), read from its file the first time. */
    private String secret(String name, String label) {
        if (name == null) {
            return null;
        }
        String known = secrets.get(name);
        if (known != null) {
            return known;
        }
        if (name.startsWith("/")) {
            // SPDK before 24.05 named the PSK's file itself in nvmf_subsystem_add_host's psk.
            String secret = files.read(name, name);
            secrets.put(name, secret);
            return secret;
        }
        JsonAt path = keyring.get(name);
        if (path == null) {
            throw new IllegalArgumentException(label + ": key " + name + " is not added by any keyring_file_add_key"
                    + " of the document's keyring (keys of the Linux kernel keyring cannot be read here)");
        }
        String secret = files.read(name, path.nonEmptyText());
        secrets.put(name, secret);
        return secret;
    }

    /** Our host entries, checked as the target checks its own; lists what has no equivalent. */
    List<HostConfig> build() {
        List<HostConfig> entries = new ArrayList<>();
        for (Map.Entry<String, HostKeyNames> e : hosts.entrySet()) {
            HostKeyNames names = e.getValue();
            // SPDK derives TLS PSKs the specification's (standard) way.
            HostConfig entry = new HostConfig(e.getKey(), secret(names.key(), names.label()),
                    secret(names.ctrlKey(), names.label()), null, null, secret(names.psk(), names.label()), null);
            try {
                HostAuthRegistry.parse(entry);
                io.nvmeof.tgt.auth.TlsKeys.parse(entry);
            } catch (IllegalArgumentException x) {
                throw new IllegalArgumentException(names.label() + ": " + x.getMessage(), x); // never the secret
            }
            entries.add(entry);
            for (String label : withoutKeys.getOrDefault(e.getKey(), Set.of())) {
                notMapped.add(label + ": no key here, but " + names.label() + " gives the host one: keys are per host"
                        + " here, so it authenticates (or uses TLS) on this subsystem too");
            }
        }
        for (String name : keyring.keySet()) {
            if (!secrets.containsKey(name)) {
                notMapped.add("keyring_file_add_key(" + name + "): not used by any host's DH-HMAC-CHAP or TLS key;"
                        + " not imported (its file is not read)");
            }
        }
        return entries;
    }
}
