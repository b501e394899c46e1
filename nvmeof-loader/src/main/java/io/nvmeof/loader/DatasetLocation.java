package io.nvmeof.loader;

import io.nvmeof.initiator.TransportId;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One namespace of a dataset: the subsystem's transport ID (one per path) and the NSID. Written as a URL,
 * {@code tcp://127.0.0.1:4420/nqn.2026-12.com.example:train/1} ({@code rdma://} for RDMA; the NSID defaults to 1),
 * or as SPDK writes transport IDs, {@code 'trtype:tcp traddr:127.0.0.1 trsvcid:4420 subnqn:nqn... ns:1'}.
 *
 * <p>Several paths to the namespace (listeners of one subsystem, or target processes over one shared backend that
 * export it under the same NQN and identifiers) are several addresses in the URL, comma separated:
 * {@code tcp://10.0.0.5:4420,10.0.0.6:4420/nqn.2026-12.com.example:train/1}. The dataset then reads that namespace
 * through all of them as one multipath namespace, and goes on through the others when one goes away.
 *
 * @param paths the subsystem's transport IDs, one per path: same transport and NQN, different addresses
 */
public record DatasetLocation(List<TransportId> paths, long nsid) {
    public DatasetLocation {
        if (nsid < 1 || nsid > 0xFFFF_FFFEL) {
            throw new IllegalArgumentException("nsid must be 1 to 4294967294, got " + nsid);
        }
        paths = List.copyOf(paths);
        if (paths.isEmpty()) {
            throw new IllegalArgumentException("a namespace location needs at least one path");
        }
        for (TransportId t : paths) {
            if (!t.subnqn().equals(paths.get(0).subnqn()) || !t.trtype().equals(paths.get(0).trtype())) {
                throw new IllegalArgumentException("the paths of one namespace are of one subsystem over one"
                        + " transport: " + paths.get(0) + " and " + t + " differ");
            }
            if (paths.indexOf(t) != paths.lastIndexOf(t)) {
                throw new IllegalArgumentException("path " + t.address() + " is given twice");
            }
        }
    }

    /** One path. */
    public DatasetLocation(TransportId transportId, long nsid) {
        this(List.of(transportId), nsid);
    }

    /** The first path's transport ID (the only one of a single-path location). */
    public TransportId transportId() {
        return paths.get(0);
    }

    public static DatasetLocation parse(String s) {
        String t = s.trim();
        int scheme = t.indexOf("://");
        if (scheme > 0) {
            return parseUrl(t, scheme);
        }
        if (t.contains("trtype:") || t.contains("traddr:")) {
            return parseSpdk(t);
        }
        throw new IllegalArgumentException("'" + s + "' is not a namespace location: write tcp://HOST:PORT/SUBNQN[/NSID]"
                + " (rdma:// for RDMA) or 'trtype:tcp traddr:HOST trsvcid:PORT subnqn:NQN ns:NSID'");
    }

    private static DatasetLocation parseUrl(String t, int scheme) {
        String trtype = t.substring(0, scheme).toLowerCase(Locale.ROOT);
        checkTransport(trtype, t);
        String rest = t.substring(scheme + 3);
        int slash = rest.indexOf('/');
        if (slash < 0 || slash == rest.length() - 1) {
            throw new IllegalArgumentException("'" + t + "' names no subsystem: write " + trtype
                    + "://HOST:PORT/SUBNQN[/NSID]");
        }
        String authority = rest.substring(0, slash);
        String path = rest.substring(slash + 1);
        long nsid = 1;
        int last = path.lastIndexOf('/');
        if (last > 0 && !path.substring(last + 1).isEmpty() && path.substring(last + 1).chars().allMatch(Character::isDigit)) {
            nsid = parseNumber(path.substring(last + 1), "nsid", t);
            path = path.substring(0, last);
        }
        List<TransportId> paths = new ArrayList<>();
        for (String hostPort : authority.split(",", -1)) {
            paths.add(parseHostPort(hostPort.trim(), trtype, path, t));
        }
        return new DatasetLocation(paths, nsid);
    }

    /** HOST, HOST:PORT, [IPV6] or [IPV6]:PORT of the URL {@code t} ({@link TransportId#parseAddress}). */
    private static TransportId parseHostPort(String hostPort, String trtype, String subnqn, String t) {
        try {
            TransportId.Address a = TransportId.parseAddress(hostPort, TransportId.DEFAULT_IO_PORT);
            return new TransportId(trtype, a.traddr(), a.trsvcid(), subnqn);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("'" + t + "': " + e.getMessage() + (t.contains(",")
                    ? " in one of its comma-separated paths" : ""));
        }
    }

    private static DatasetLocation parseSpdk(String t) {
        Map<String, String> kv = new LinkedHashMap<>();
        for (String part : t.split("\\s+")) {
            int colon = part.indexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("'" + part + "' in '" + t + "' is not KEY:VALUE");
            }
            kv.put(part.substring(0, colon).toLowerCase(Locale.ROOT), part.substring(colon + 1));
        }
        String trtype = kv.getOrDefault("trtype", "tcp").toLowerCase(Locale.ROOT);
        checkTransport(trtype, t);
        String host = kv.get("traddr");
        String nqn = kv.get("subnqn");
        if (host == null || nqn == null) {
            throw new IllegalArgumentException("'" + t + "' needs traddr: and subnqn:");
        }
        int port = kv.containsKey("trsvcid") ? (int) parseNumber(kv.get("trsvcid"), "trsvcid", t) : TransportId.DEFAULT_IO_PORT;
        long nsid = kv.containsKey("ns") ? parseNumber(kv.get("ns"), "ns", t) : 1;
        return new DatasetLocation(new TransportId(trtype, host, port, nqn), nsid);
    }

    private static void checkTransport(String trtype, String t) {
        if (!trtype.equals("tcp") && !trtype.equals("rdma")) {
            throw new IllegalArgumentException("'" + t + "': transport '" + trtype + "' is not tcp or rdma");
        }
    }

    private static long parseNumber(String v, String what, String t) {
        try {
            long n = Long.parseLong(v);
            if (n <= 0) {
                throw new NumberFormatException();
            }
            if (what.contains("port") || what.equals("trsvcid")) {
                if (n > 65535) {
                    throw new NumberFormatException();
                }
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + t + "': " + what + " '" + v + "' is not a valid number");
        }
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder(transportId().trtype()).append("://");
        for (int i = 0; i < paths.size(); i++) {
            b.append(i > 0 ? "," : "").append(paths.get(i).address());
        }
        return b.append('/').append(transportId().subnqn()).append('/').append(nsid).toString();
    }
}
