package io.nvmeof.rdma;

import com.sun.jna.Pointer;

import java.util.ArrayList;
import java.util.List;

/**
 * An RDMA device context (struct ibv_context).
 *
 * <p>WHY the contexts come from librdmacm ({@code rdma_get_devices}) and not from {@code ibv_open_device}: librdmacm
 * opens every device once per process and binds each CM id to one of those contexts, and {@code rdma_create_qp}
 * insists that the PD's context is the id's context. Using librdmacm's contexts everywhere lets one protection
 * domain, its memory registrations and its CQs serve every connection on the device. librdmacm keeps these contexts
 * open for the life of the process, so {@link #close()} releases nothing native.
 */
public final class RdmaDevice implements AutoCloseable {
    private final long context;
    private final String name;

    private RdmaDevice(long context, String name) {
        this.context = context;
        this.name = name;
    }

    /** Opens the device named {@code name} (e.g. "rxe0"), or the first device when {@code name} is null. */
    public static RdmaDevice open(String name) throws RdmaException {
        RdmaLibrary.requireAvailable();
        for (RdmaDevice d : all()) {
            if (name == null || d.name.equals(name)) {
                return d;
            }
        }
        throw new RdmaException("no RDMA device named " + name + "; present: " + RdmaLibrary.deviceNames(), 19);
    }

    /** Every device librdmacm sees. */
    public static List<RdmaDevice> all() throws RdmaException {
        RdmaLibrary.requireAvailable();
        int[] num = new int[1];
        long list = RdmaCmNative.rdma_get_devices(num);
        if (list == 0) {
            throw RdmaException.fromErrno("rdma_get_devices", com.sun.jna.Native.getLastError());
        }
        try {
            List<RdmaDevice> devices = new ArrayList<>(num[0]);
            Pointer p = new Pointer(list);
            for (int i = 0; i < num[0]; i++) {
                devices.add(forContext(p.getLong(8L * i)));
            }
            return devices;
        } finally {
            RdmaCmNative.rdma_free_devices(list);
        }
    }

    /** The device of a context pointer (e.g. a CM id's {@code verbs}). */
    static RdmaDevice forContext(long context) {
        return new RdmaDevice(context, IbvNative.ibv_get_device_name(NvrNative.nvr_context_device(context)));
    }

    /**
     * Takes the device's next asynchronous event, waiting up to {@code timeoutMillis} (0: only look), or null when
     * there is none. The event is acknowledged. Events go to whoever asks first: one thread per device should.
     */
    public AsyncEvent pollAsyncEvent(int timeoutMillis) throws RdmaException {
        long[] out = new long[4];
        int rc = RdmaLibrary.check(NvrNative.nvr_get_async_event(context, timeoutMillis, out), "ibv_get_async_event");
        return rc == 1 ? new AsyncEvent((int) out[0], (int) out[1], out[2], (int) out[3]) : null;
    }

    public String name() {
        return name;
    }

    /** The struct ibv_context pointer. */
    public long contextAddress() {
        return context;
    }

    public DeviceAttributes attributes() throws RdmaException {
        long[] out = new long[16];
        RdmaLibrary.check(NvrNative.nvr_query_device(context, out), "ibv_query_device(" + name + ")");
        return DeviceAttributes.of(out);
    }

    public PortAttributes port(int portNumber) throws RdmaException {
        long[] out = new long[6];
        RdmaLibrary.check(NvrNative.nvr_query_port(context, portNumber, out), "ibv_query_port(" + name + ")");
        return PortAttributes.of(out);
    }

    public ProtectionDomain allocateProtectionDomain() throws RdmaException {
        long[] out = new long[1];
        RdmaLibrary.check(NvrNative.nvr_alloc_pd(context, out), "ibv_alloc_pd(" + name + ")");
        return new ProtectionDomain(this, out[0]);
    }

    public CompletionChannel createCompletionChannel() throws RdmaException {
        long[] out = new long[1];
        RdmaLibrary.check(NvrNative.nvr_create_comp_channel(context, out), "ibv_create_comp_channel(" + name + ")");
        return new CompletionChannel(out[0]);
    }

    /**
     * A completion queue of at least {@code entries} entries. {@code channel} may be null (busy polling only);
     * {@code compVector} picks the interrupt vector (spread poll groups over vectors on a real NIC).
     */
    public CompletionQueue createCompletionQueue(int entries, CompletionChannel channel, int compVector)
            throws RdmaException {
        long[] out = new long[2];
        RdmaLibrary.check(NvrNative.nvr_create_cq(context, entries, channel == null ? 0 : channel.address(),
                compVector, out), "ibv_create_cq(" + name + ", " + entries + ")");
        CompletionQueue cq = new CompletionQueue(out[0], (int) out[1], channel);
        if (channel != null) {
            channel.register(cq);
        }
        return cq;
    }

    @Override
    public void close() {
        // librdmacm owns the context (see the class comment).
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RdmaDevice d && d.context == context;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(context);
    }

    @Override
    public String toString() {
        return "RdmaDevice[" + name + "]";
    }
}
