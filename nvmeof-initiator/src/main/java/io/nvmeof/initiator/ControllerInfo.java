package io.nvmeof.initiator;

import io.nvmeof.protocol.identify.IdentifyController;
import java.util.Arrays;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The Identify Controller data a host needs, decoded. {@code mdts} is in bytes (0 = no limit; {@link Long#MAX_VALUE}
 * when the limit is beyond a long); {@code ioccsz} and {@code iorcsz} are in 16-byte units as on the wire; {@code raw}
 * is a copy of the whole 4096-byte structure.
 */
public record ControllerInfo(int vid, int ssvid, String serial, String model, String firmware, int cntlid,
                             long version, long mdts, int maxcmd, long nn, long ioccsz, long iorcsz, int icdoff,
                             long sgls, int kas, int oncs, String subnqn, int controllerType, byte[] raw) {

    public ControllerInfo {
        raw = raw.clone();
    }

    /** A copy of the 4096-byte Identify Controller data. */
    @Override
    public byte[] raw() {
        return raw.clone();
    }

    /**
     * Decodes Identify Controller data; {@code pageSize} is the controller's memory page size (from CAP.MPSMIN), a
     * power of two. MDTS is a power of two of pages up to 2^255: one beyond a long is {@link Long#MAX_VALUE} (no
     * limit in practice, as Linux takes such an MDTS), not what the shift would wrap to.
     */
    public static ControllerInfo decode(byte[] data, long pageSize) {
        IdentifyController id = new IdentifyController().<IdentifyController>wrap(new UnsafeBuffer(data), 0);
        int mdts = id.mdts();
        long mdtsBytes = mdts == 0 ? 0
                : mdts >= Long.numberOfLeadingZeros(pageSize) ? Long.MAX_VALUE : pageSize << mdts;
        return new ControllerInfo(id.vid(), id.ssvid(), id.serialNumber(), id.modelNumber(), id.firmwareRevision(),
                id.cntlid(), id.version(), mdtsBytes, id.maxcmd(), id.nn(), id.ioccsz(), id.iorcsz(), id.icdoff(),
                id.sgls(), id.kas(), id.oncs(), id.subnqn(), id.controllerType(), data);
    }

    /**
     * CMIC bit 3: the controller reports Asymmetric Namespace Access (ANA log 0Ch, ANAGRPID in Identify Namespace),
     * which a multipathing host uses to choose among its paths.
     */
    public boolean anaReporting() {
        return (identify().cmic() & IdentifyController.CMIC_ANA) != 0;
    }

    /** OAES bit 11: the controller sends ANA Change notices (enabled by Async Event Configuration bit 11). */
    public boolean anaChangeNotices() {
        return (identify().oaes() & IdentifyController.OAES_ANA_CHANGE) != 0;
    }

    /** ANATT: the longest, in seconds, a group of this controller stays in the ANA change state (0: not reported). */
    public int anaTransitionTimeSeconds() {
        return identify().anatt();
    }

    /**
     * CQT (NVMe 2.1, TP4129): how long, in ms, the controller's commands may still run after it learns its host is
     * gone (its keep-alive expired, its connection ended); 0: not reported.
     */
    public int commandQuiesceTimeMs() {
        return identify().cqt();
    }

    /** CTRATT bit 6 (TBKAS): the controller's keep-alive timer counts any command, not only Keep Alive. */
    public boolean trafficBasedKeepAlive() {
        return (identify().ctratt() & CTRATT_TBKAS) != 0;
    }

    private static final long CTRATT_TBKAS = 1L << 6;

    /** NANAGRPID: how many ANA groups the ANA log may describe. */
    long anaGroupCount() {
        return identify().nanagrpid();
    }

    /** MNAN: the most namespaces the subsystem supports (0: not reported; NN applies). */
    long maxNamespaces() {
        return identify().mnan();
    }

    private IdentifyController identify() {
        return new IdentifyController().<IdentifyController>wrap(new UnsafeBuffer(raw), 0);
    }

    /** "major.minor.tertiary" of {@link #version()}. */
    public String versionString() {
        return (version >>> 16) + "." + ((version >>> 8) & 0xFF) + "." + (version & 0xFF);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ControllerInfo other && Arrays.equals(raw, other.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }

    @Override
    public String toString() {
        return "ControllerInfo[model=" + model + ", serial=" + serial + ", firmware=" + firmware + ", cntlid=" + cntlid
                + ", version=" + versionString() + ", mdts=" + mdts + ", maxcmd=" + maxcmd + ", nn=" + nn
                + ", ioccsz=" + ioccsz + ", subnqn=" + subnqn + ", type=" + controllerType + "]";
    }
}
