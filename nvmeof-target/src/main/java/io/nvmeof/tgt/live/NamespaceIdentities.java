package io.nvmeof.tgt.live;

import io.nvmeof.tgt.backend.FileBackend;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * What tells a target's namespaces apart, checked over all of them: each backing file or block device backs one
 * namespace (two would overwrite each other's data; SPDK refuses a bdev another namespace has claimed), and no two
 * namespaces have the same UUID, NGUID or EUI-64. A Linux host refuses a namespace whose identifier another
 * namespace it sees has, in the same subsystem or in any other (nvme_subsys_check_duplicate_ids,
 * nvme_global_check_duplicate_ids); a host may see every subsystem of the target, so the whole target is checked. An
 * identifier that is all zeroes is none (the host skips it), so it clashes with nothing.
 */
public final class NamespaceIdentities {
    private static final HexFormat HEX = HexFormat.of();

    /** A namespace where it is, or would be, exported. */
    public record Placed(String nqn, Namespace ns) {
        String name() {
            return "namespace " + ns.nsid() + " of " + nqn;
        }
    }

    /** One thing a namespace must not share, and how to say so. */
    private record Key(String kind, Object value) {
    }

    private NamespaceIdentities() {
    }

    /** Every namespace of the target's subsystems now. */
    public static List<Placed> live(TargetCore core) {
        List<Placed> out = new ArrayList<>();
        for (Subsystem s : core.subsystems()) {
            if (!s.isDiscovery()) {
                s.namespaces().forEach(ns -> out.add(new Placed(s.nqn(), ns)));
            }
        }
        return out;
    }

    /** The first clash of namespaces about to be added with each other or with the target's ({@link #clash}). */
    static String clashAdding(TargetCore core, List<Placed> adding) {
        List<Placed> all = live(core);
        all.addAll(adding);
        return clash(all);
    }

    /**
     * The first clash among {@code namespaces} as a sentence naming both namespaces and saying what to do (the later
     * one is the one refused); null when there is none.
     */
    public static String clash(List<Placed> namespaces) {
        Map<Key, Placed> seen = new HashMap<>();
        for (Placed p : namespaces) {
            for (Key k : keys(p.ns())) {
                Placed first = seen.putIfAbsent(k, p);
                if (first != null && first.ns() != p.ns()) {
                    return describe(k, p, first);
                }
            }
        }
        return null;
    }

    private static List<Key> keys(Namespace ns) {
        List<Key> keys = new ArrayList<>(4);
        Object storage = ns.backend() instanceof FileBackend f ? f.identity() : null;
        if (storage != null) {
            keys.add(new Key("storage", storage));
        }
        if (ns.uuid().getMostSignificantBits() != 0 || ns.uuid().getLeastSignificantBits() != 0) {
            keys.add(new Key("UUID", ns.uuid().toString()));
        }
        byte[] nguid = ns.nguid();
        if (!allZero(nguid)) {
            keys.add(new Key("NGUID", HEX.formatHex(nguid)));
        }
        byte[] eui64 = ns.eui64();
        if (!allZero(eui64)) {
            keys.add(new Key("EUI-64", HEX.formatHex(eui64)));
        }
        return keys;
    }

    private static boolean allZero(byte[] b) {
        for (byte x : b) {
            if (x != 0) {
                return false;
            }
        }
        return true;
    }

    private static String describe(Key k, Placed refused, Placed holder) {
        if (k.kind().equals("storage")) {
            FileBackend mine = (FileBackend) refused.ns().backend();
            FileBackend theirs = (FileBackend) holder.ns().backend();
            String what = mine.isBlockDevice() ? "block device " : "file ";
            String same = mine.path().equals(theirs.path()) ? what + mine.path()
                    : what + mine.path() + " (the same " + (mine.isBlockDevice() ? "device" : "file") + " as "
                    + theirs.path() + ")";
            return refused.name() + ": " + same + " already backs " + holder.name() + "; one " + what.strip()
                    + " backs one namespace (two would overwrite each other's data, as SPDK refuses a bdev another"
                    + " namespace has claimed): remove " + holder.name() + " first, or use another " + what.strip();
        }
        String hint = switch (k.kind()) {
            case "UUID" -> "give it another uuid, or leave uuid out for one of its own";
            case "NGUID" -> "give it another nguid, or leave nguid out (the NGUID is then the UUID's 16 bytes)";
            default -> "give it an nguid whose first 8 bytes (the EUI-64) differ";
        };
        return refused.name() + " would have " + k.kind() + " " + k.value() + ", which " + holder.name() + " has;"
                + " Linux hosts refuse namespaces with the same UUID, NGUID or EUI-64, in one subsystem or across"
                + " subsystems: " + hint;
    }
}
