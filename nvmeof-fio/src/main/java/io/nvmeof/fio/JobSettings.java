package io.nvmeof.fio;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.TransportId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the fio engine hands {@link FioJob#open} and {@link Probe}: its options as {@code key=value} strings, already
 * checked and completed with their defaults by the engine, and one {@code namespace=} per fio file, in fio's file
 * order: {@code trtype TAB traddr TAB trsvcid TAB subnqn TAB nsid} (the engine reads fio's {@code filename=} in SPDK's
 * syntax, or takes its own options when a job has none). Keys: {@code hostnqn}, {@code io_queues},
 * {@code queue_depth}, {@code hdgst}, {@code ddgst} (0 or 1), {@code busy_poll_us}, and {@code ctrl_loss_tmo},
 * {@code fast_io_fail_tmo}, {@code reconnect_delay} in seconds as nvme-cli's connect takes them (-1: forever / off).
 */
final class JobSettings {
    /** One fio file: a namespace of a subsystem. */
    record Namespace(TransportId target, long nsid) {
        @Override
        public String toString() {
            return target + " nsid " + nsid;
        }
    }

    final ConnectOptions options;
    final List<Namespace> namespaces;

    private JobSettings(ConnectOptions options, List<Namespace> namespaces) {
        this.options = options;
        this.namespaces = List.copyOf(namespaces);
    }

    /** @throws IllegalArgumentException naming the setting that is wrong */
    static JobSettings parse(String[] settings) {
        ConnectOptions.Builder b = ConnectOptions.builder();
        List<Namespace> namespaces = new ArrayList<>();
        for (String s : settings) {
            int eq = s.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("engine setting '" + s + "' is not key=value");
            }
            String key = s.substring(0, eq);
            String value = s.substring(eq + 1);
            switch (key) {
                case "namespace" -> namespaces.add(namespace(value));
                case "hostnqn" -> b.hostNqn(value);
                case "io_queues" -> b.ioQueues(number(key, value));
                case "queue_depth" -> b.queueDepth(Math.max(2, Math.min(number(key, value), ConnectOptions.MAX_QUEUE_DEPTH)));
                case "hdgst" -> b.headerDigest(number(key, value) != 0);
                case "ddgst" -> b.dataDigest(number(key, value) != 0);
                case "busy_poll_us" -> b.busyPoll(Duration.ofNanos(number(key, value) * 1000L));
                case "ctrl_loss_tmo" -> b.ctrlLossTimeout(seconds(key, value));
                case "fast_io_fail_tmo" -> b.fastIoFailTimeout(seconds(key, value));
                case "reconnect_delay" -> b.reconnectDelay(seconds(key, value));
                default -> throw new IllegalArgumentException("unknown engine setting '" + key + "': the engine and "
                        + "nvmeof.jar are from different builds; rebuild both");
            }
        }
        if (namespaces.isEmpty()) {
            throw new IllegalArgumentException("the engine named no namespace");
        }
        return new JobSettings(b.build(), namespaces);
    }

    /** The job's controllers, one per distinct target, and its namespaces, one per fio file in fio's order. */
    record Connected(List<NvmeofController> controllers, NamespaceHandle[] namespaces) implements AutoCloseable {
        @Override
        public void close() {
            controllers.forEach(NvmeofController::close);
        }
    }

    /**
     * Connects to every target the namespaces name (once each) and takes each namespace.
     *
     * @throws NvmeofException naming the target and namespace that failed, and why
     */
    Connected connect(ConnectOptions with) {
        Map<TransportId, NvmeofController> byTarget = new LinkedHashMap<>();
        NamespaceHandle[] handles = new NamespaceHandle[namespaces.size()];
        try {
            for (int i = 0; i < handles.length; i++) {
                Namespace n = namespaces.get(i);
                try {
                    NvmeofController c = byTarget.get(n.target());
                    if (c == null) {
                        c = NvmeofController.connect(n.target(), with);
                        byTarget.put(n.target(), c);
                    }
                    handles[i] = c.namespace(n.nsid());
                } catch (RuntimeException e) {
                    throw new NvmeofException(n + ": " + (e.getMessage() != null ? e.getMessage() : e.toString()), e);
                }
            }
            return new Connected(List.copyOf(byTarget.values()), handles);
        } catch (RuntimeException e) {
            byTarget.values().forEach(NvmeofController::close);
            throw e;
        }
    }

    private static Namespace namespace(String value) {
        String[] f = value.split("\t", -1);
        if (f.length != 5) {
            throw new IllegalArgumentException("namespace setting '" + value + "' is not trtype, traddr, trsvcid, subnqn"
                    + " and nsid");
        }
        return new Namespace(new TransportId(f[0], f[1], number("trsvcid", f[2]), f[3]), Long.parseLong(f[4]));
    }

    private static int number(String key, String value) {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + "=" + value + " is not a number");
        }
    }

    /** nvme-cli's seconds: -1 is {@link ConnectOptions#OFF} (reconnect forever, never fail fast). */
    private static Duration seconds(String key, String value) {
        int s = number(key, value);
        return s < 0 ? ConnectOptions.OFF : Duration.ofSeconds(s);
    }
}
