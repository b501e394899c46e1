package io.nvmeof.cli;

import io.nvmeof.admin.AdminOptions;
import io.nvmeof.admin.AdminServer;
import io.nvmeof.admin.AdminToken;
import io.nvmeof.admin.StateFile;
import io.nvmeof.admin.migration.Migration;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Runs a target until Ctrl-C. */
@Command(name = "target", mixinStandardHelpOptions = true,
        description = "Run an NVMe-oF target. With no options: subsystem " + TargetConfig.DEFAULT_NQN
                + " with one 1 GiB RAM namespace on NVMe/TCP 127.0.0.1:4420 (discovery on the same listener).")
final class TargetCommand implements Callable<Integer> {
    @Option(names = {"-c", "--config"}, description = "JSON configuration file (subsystems, namespaces, listeners, hosts)")
    Path config;

    @Option(names = {"-t", "--transport"}, defaultValue = "tcp",
            description = "Transport: tcp, or rdma (needs an RDMA device and rdma-core). Default: ${DEFAULT-VALUE}")
    String transport;

    @Option(names = {"-a", "--address"}, defaultValue = "127.0.0.1", description = "Listen address. Default: ${DEFAULT-VALUE}")
    String address;

    @Option(names = {"-p", "--port"}, defaultValue = "4420", description = "Listen port. Default: ${DEFAULT-VALUE}")
    int port;

    @Option(names = "--size", defaultValue = "1GiB", description = "Namespace size: bytes, or K, M, G, T or KiB, MiB, GiB, TiB (powers of 1024; KB, MB, GB are"
            + " refused as ambiguous). Default: ${DEFAULT-VALUE}")
    String size;

    @Option(names = "--block-size", defaultValue = "512", description = "Logical block size, 512 or 4096. Default: ${DEFAULT-VALUE}")
    int blockSize;

    @Option(names = "--sparse", description = "Commit the RAM namespace's memory as it is first written, not all when"
            + " the target starts (the default, so that writes never wait for memory)")
    boolean sparse;

    @Option(names = "--file", description = "Back the namespace with this file (created sparse if missing) instead of RAM")
    String file;

    @Option(names = "--poll-groups", description = "Poll-group threads (default: one per core)")
    Integer pollGroups;

    @Option(names = "--poll-group-cpus", paramLabel = "CPUS", description = "Run the poll groups on these CPUs, one"
            + " each, as taskset -c writes them (2-3,6); the JVM's other threads (compilers, GC, timers) run on the"
            + " process's other CPUs. Sets --poll-groups to their number. \"none\" drops a list the configuration"
            + " or saved state gives. Default: the kernel places every thread")
    String pollGroupCpus;

    @Option(names = "--busy-poll-us", paramLabel = "US", description = "Keep each NVMe/TCP poll group polling its"
            + " connections for US microseconds after its last work before it blocks (as SPDK's poll groups poll):"
            + " lower latency, at up to a core per busy poll group. 0, the default, blocks at once")
    Integer busyPollUs;

    @Option(names = "--warm-up", paramLabel = "SECONDS", defaultValue = "10", description = "Before listening, run"
            + " the target's own I/O path (a private namespace over loopback) until the JIT has compiled it, for at most"
            + " this long, so that hosts' first seconds run as fast as later ones; 0: start cold. Default:"
            + " ${DEFAULT-VALUE}")
    double warmUpSeconds;

    @Option(names = "--print-config", description = "Print the effective configuration as JSON and exit")
    boolean printConfig;

    @Option(names = "--admin-listen", defaultValue = "127.0.0.1:8080",
            description = "Serve the admin REST API on this ADDRESS:PORT (a non-loopback address needs --admin-tls-cert"
                    + " and --admin-tls-key). Default: ${DEFAULT-VALUE}")
    String adminListen;

    @Option(names = "--admin-tls-cert", paramLabel = "PEM", description = "Serve the admin API over HTTPS with this PEM certificate (chain, leaf first)")
    Path adminTlsCert;

    @Option(names = "--admin-tls-key", paramLabel = "PEM", description = "The PEM private key of --admin-tls-cert (unencrypted PKCS#8, RSA or EC)")
    Path adminTlsKey;

    @Option(names = "--no-admin", description = "Do not serve the admin REST API")
    boolean noAdmin;

    @Option(names = "--admin-token-file", description = "Read the admin API's bearer token from this file (default: STATE_DIR/admin-token, generated on first start, mode 0600)")
    Path adminTokenFile;

    @Option(names = "--state-dir", description = "Where the target keeps its state: the admin token, config.json"
            + " once the admin API changed anything (a later start restores it), and reservations/ for namespaces whose"
            + " hosts asked their reservations to persist through power loss. Default: $XDG_DATA_HOME/nvmeof or ~/.local/share/nvmeof")
    Path stateDir;

    @Option(names = "--allow-dir", description = "A directory under which file-backed namespaces may be created over the admin API (repeatable; none: refused)")
    List<Path> allowDirs = List.of();

    @Option(names = "--import-nvmetcli", paramLabel = "FILE", description = "Start from the Linux target's nvmetcli"
            + " config.json (what nvmetcli save writes); what cannot be mapped is listed")
    Path importNvmetcli;

    @Option(names = "--import-spdk", paramLabel = "FILE", description = "Start from SPDK's save_config output (its nvmf"
            + " and bdev subsystems); what cannot be mapped is listed")
    Path importSpdk;

    @Option(names = "--drop-security", description = "Import an nvmetcli or SPDK configuration even when it has security"
            + " settings this target does not have (TLS and its keys, per-host namespace visibility, read-only"
            + " namespaces): hosts then connect without them; each dropped setting is listed")
    boolean dropSecurity;

    @Override
    public Integer call() throws Exception {
        TargetConfig cfg;
        int sources = (config != null ? 1 : 0) + (importNvmetcli != null ? 1 : 0) + (importSpdk != null ? 1 : 0);
        if (sources > 1) {
            throw new IllegalArgumentException("--config, --import-nvmetcli and --import-spdk each give the whole"
                    + " configuration: give one of them");
        }
        if (importNvmetcli != null || importSpdk != null) {
            cfg = imported(importNvmetcli != null ? Migration.Format.NVMETCLI : Migration.Format.SPDK,
                    importNvmetcli != null ? importNvmetcli : importSpdk);
        } else if (config != null) {
            cfg = TargetConfig.load(config);
        } else {
            if (!"tcp".equals(transport) && !"rdma".equals(transport)) {
                throw new IllegalArgumentException("transport '" + transport + "' is unknown; use tcp or rdma");
            }
            cfg = TargetConfig.defaults(transport, address, port, size, blockSize, file);
            if (sparse) {
                if (file != null) {
                    throw new IllegalArgumentException("--sparse is for a RAM namespace; a --file is created sparse"
                            + " when missing");
                }
                cfg = cfg.withNamespaces(n -> n.withSparse(true));
            }
        }
        if (sparse && sources > 0) {
            throw new IllegalArgumentException("--sparse sets up the namespace --size makes; in a configuration, give a"
                    + " RAM namespace \"sparse\": true");
        }
        StateFile state = noAdmin ? null : new StateFile(stateDirectory(stateDir));
        if (state != null && state.exists()) {
            // What the admin API made live last time wins over the command line: that is what restarting restores.
            TargetConfig given = cfg;
            cfg = state.load();
            System.err.println("restored the configuration saved by the admin API in " + state.path()
                    + (sources > 0 ? " (the configuration given on the command line is ignored)" : "")
                    + "; remove that file to start from the command line's configuration");
            if (sources > 0 && given.hosts() != null) {
                // A secret changed or rotated in the configuration file must take effect, not be dropped in favour of
                // the saved one; the hosts the file does not name keep what the admin API set for them.
                cfg = cfg.withHosts(hostsOf(cfg.hosts(), given.hosts()));
                System.err.println("the hosts' DH-HMAC-CHAP secrets the command line's configuration gives are taken"
                        + " from it; the other hosts keep theirs from the state file");
            }
        }
        // How the poll groups run is this start's choice, so it applies over a configuration and a restored state.
        if (pollGroups != null) {
            cfg = cfg.withPollGroups(pollGroups);
        }
        if (busyPollUs != null) {
            cfg = cfg.withBusyPollUs(busyPollUs);
        }
        if ("none".equals(pollGroupCpus)) {
            cfg = cfg.withPollGroupCpus(null);
        } else if (pollGroupCpus != null) {
            try {
                io.nvmeof.cpu.CpuList.parse(pollGroupCpus);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--poll-group-cpus: " + e.getMessage(), e);
            }
            cfg = cfg.withPollGroupCpus(pollGroupCpus);
        }
        if (printConfig) {
            cfg.checkSizes();
            if (cfg.hosts() != null && !cfg.hosts().isEmpty()) {
                System.err.println("the hosts' DH-HMAC-CHAP secrets are left out of the printed configuration");
            }
            System.out.println(cfg.withHosts(null).toJson());
            return 0;
        }
        if (!(warmUpSeconds >= 0 && warmUpSeconds <= 600)) {
            throw new IllegalArgumentException("--warm-up must be 0 (none) to 600 seconds, got " + warmUpSeconds);
        }
        NvmeTarget.BeforeListening warmUp = null;
        if (warmUpSeconds > 0 && cfg.listeners() != null) {
            if (cfg.listeners().stream().noneMatch(l -> l.transport() == null || "tcp".equals(l.transport()))) {
                System.err.println("warm-up skipped: it runs through NVMe/TCP, and no listener here is NVMe/TCP");
            } else {
                checkTcpPortsFree(cfg); // a port in use fails the start now, not after the warm-up
                warmUp = t -> {
                    String why = TargetWarmUp.notWorthIt();
                    if (why != null) {
                        System.err.println("warm-up skipped: " + why);
                        return;
                    }
                    System.err.println("warming up the I/O path before listening (--warm-up 0 skips it)...");
                    System.err.println(TargetWarmUp.run(t, warmUpSeconds).describe());
                };
            }
        }
        // Reservations a host asked to persist through power loss are kept in the state directory, admin API or not.
        NvmeTarget target = NvmeTarget.start(cfg, stateDirectory(stateDir), warmUp);
        if (state != null) {
            target.live().saveChangesWith(state::save);
        }
        AdminServer admin = null;
        if (!noAdmin) {
            try {
                admin = startAdmin(target);
            } catch (Exception e) {
                target.close();
                throw new IllegalArgumentException(e.getMessage() + " (or run with --no-admin)", e);
            }
        }
        AdminServer adminServer = admin;
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("shutting down");
            if (adminServer != null) {
                adminServer.close();
            }
            target.close();
            stopped.countDown();
        }, "nvmeof-shutdown"));
        System.err.println("target running; Ctrl-C stops it");
        stopped.await();
        return 0;
    }

    /** Binds and closes each NVMe/TCP listener's address and port once, saying what the listener would say. */
    private static void checkTcpPortsFree(TargetConfig cfg) {
        for (TargetConfig.ListenerConfig l : cfg.listeners()) {
            if (!(l.transport() == null || "tcp".equals(l.transport())) || l.port() == null || l.port() == 0) {
                continue;
            }
            String address = l.address() != null ? l.address() : "127.0.0.1";
            try (java.net.ServerSocket s = new java.net.ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new java.net.InetSocketAddress(address, l.port()));
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("cannot listen on NVMe/TCP " + address + ":" + l.port() + ": "
                        + e.getMessage() + " (is another target already using the port? pick another with --port)", e);
            }
        }
    }

    /**
     * {@code given} (the configuration file's host entries, checked at start as they are) and the saved entries of the
     * hosts it does not name.
     */
    static List<TargetConfig.HostConfig> hostsOf(List<TargetConfig.HostConfig> saved,
                                                 List<TargetConfig.HostConfig> given) {
        java.util.Set<String> named = new java.util.HashSet<>();
        given.forEach(h -> named.add(h != null ? h.nqn() : null));
        List<TargetConfig.HostConfig> hosts = new java.util.ArrayList<>();
        if (saved != null) {
            saved.stream().filter(h -> h == null || !named.contains(h.nqn())).forEach(hosts::add);
        }
        hosts.addAll(given);
        return hosts;
    }

    /**
     * Reads another target's configuration, saying on stderr what it had that has no equivalent here; one with
     * security settings this target does not have is refused unless --drop-security.
     */
    private TargetConfig imported(Migration.Format format, Path file) throws java.io.IOException {
        String text;
        try {
            text = java.nio.file.Files.readString(file);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new IllegalArgumentException(file + " does not exist");
        }
        Migration.Imported in;
        try {
            in = Migration.importFrom(format, text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
        if (!in.securityLost().isEmpty() && !dropSecurity) {
            throw new IllegalArgumentException(file + " has security settings this target cannot carry over, and hosts"
                    + " would get less protection without them:\n  " + String.join("\n  ", in.securityLost())
                    + "\nNothing was started. Protect those hosts another way (a private network, a firewall, allowed"
                    + " hosts), then start with --drop-security to import without them");
        }
        for (String line : in.notMapped()) {
            System.err.println((in.securityLost().contains(line) ? "dropped security setting " : "not mapped: ") + line);
        }
        System.err.println("imported " + file + " (" + format.name().toLowerCase(java.util.Locale.ROOT) + "): "
                + (in.config().subsystems() != null ? in.config().subsystems().size() : 0) + " subsystems, "
                + (in.config().listeners() != null ? in.config().listeners().size() : 0) + " listeners, "
                + in.notMapped().size() + " items not mapped");
        return in.config();
    }

    private AdminServer startAdmin(NvmeTarget target) throws Exception {
        int colon = adminListen.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("--admin-listen must be ADDRESS:PORT, got '" + adminListen + "'");
        }
        String host = adminListen.substring(0, colon).replace("[", "").replace("]", "");
        int adminPort = Integer.parseInt(adminListen.substring(colon + 1));
        Path tokenFile = adminTokenFile != null ? adminTokenFile : stateDirectory(stateDir).resolve("admin-token");
        String token = adminTokenFile != null ? AdminToken.read(adminTokenFile) : AdminToken.loadOrCreate(tokenFile);
        if ((adminTlsCert == null) != (adminTlsKey == null)) {
            throw new IllegalArgumentException("--admin-tls-cert and --admin-tls-key go together: give both or neither");
        }
        AdminOptions.Tls tls = adminTlsCert != null ? new AdminOptions.Tls(adminTlsCert, adminTlsKey) : null;
        AdminServer server = AdminServer.start(target.live(), new AdminOptions(host, adminPort, token, allowDirs, tls));
        System.err.println("admin API on " + (tls != null ? "https" : "http") + "://" + adminListen.substring(0, colon) + ":" + server.port()
                + "/api/v1; bearer token in " + tokenFile.toAbsolutePath());
        return server;
    }

    /** {@code given}, else $XDG_DATA_HOME/nvmeof, else ~/.local/share/nvmeof (the admin command looks there too). */
    static Path stateDirectory(Path given) {
        if (given != null) {
            return given;
        }
        String xdg = System.getenv("XDG_DATA_HOME");
        if (xdg != null && !xdg.isEmpty()) {
            return Path.of(xdg, "nvmeof");
        }
        return Path.of(System.getProperty("user.home"), ".local", "share", "nvmeof");
    }
}
