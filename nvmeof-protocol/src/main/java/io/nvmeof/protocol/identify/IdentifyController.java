package io.nvmeof.protocol.identify;

import io.nvmeof.protocol.Flyweight;

/** Identify Controller data structure, 4096 bytes (CNS 01h), with the NVMe-oF attributes at 1792. */
public final class IdentifyController extends Flyweight {
    public static final int LENGTH = 4096;

    public static final int VID = 0;
    public static final int SSVID = 2;
    public static final int SN = 4;
    public static final int MN = 24;
    public static final int FR = 64;
    public static final int RAB = 72;
    public static final int IEEE = 73;
    public static final int CMIC = 76;
    public static final int MDTS = 77;
    public static final int CNTLID = 78;
    public static final int VER = 80;
    public static final int OAES = 92;
    public static final int CTRATT = 96;
    public static final int CNTRLTYPE = 111;
    public static final int OACS = 256;
    public static final int ACL = 258;
    public static final int AERL = 259;
    public static final int FRMW = 260;
    public static final int LPA = 261;
    public static final int ELPE = 262;
    public static final int KAS = 320;
    // After NSETIDMAX (339:338) and ENDGIDMAX (341:340); Linux's struct nvme_id_ctrl has them at the same offsets.
    public static final int ANATT = 342;
    public static final int ANACAP = 343;
    public static final int ANAGRPMAX = 344;
    public static final int NANAGRPID = 348;
    /**
     * Command Quiesce Time (NVMe 2.1, TP4129), in ms: how long the controller's commands may still run after it learns
     * its host is gone; 0: not reported. Linux's {@code struct nvme_id_ctrl} has it at 387:386 too.
     */
    public static final int CQT = 386;
    public static final int SQES = 512;
    public static final int CQES = 513;
    public static final int MAXCMD = 514;
    public static final int NN = 516;
    public static final int ONCS = 520;
    public static final int FUSES = 522;
    public static final int VWC = 525;
    public static final int AWUN = 526;
    public static final int AWUPF = 528;
    public static final int SGLS = 536;
    public static final int MNAN = 540;
    public static final int SUBNQN = 768;
    public static final int IOCCSZ = 1792;
    public static final int IORCSZ = 1796;
    public static final int ICDOFF = 1800;
    public static final int FCATT = 1802;
    public static final int MSDBD = 1803;
    public static final int OFCS = 1804;
    public static final int PSD0 = 2048;

    /** CMIC bit 0: the NVM subsystem may have several ports; bit 1: several controllers; bit 3: ANA reporting. */
    public static final int CMIC_MULTI_PORT = 1;
    public static final int CMIC_MULTI_CONTROLLER = 1 << 1;
    public static final int CMIC_ANA = 1 << 3;

    /**
     * ANACAP bits 0-4: the states the controller reports (optimized, non-optimized, inaccessible, persistent loss,
     * change); bit 6: a namespace's ANAGRPID does not change while it is attached.
     */
    public static final int ANACAP_ALL_STATES = 0x1F;
    public static final int ANACAP_GROUP_ID_FIXED = 1 << 6;

    public static final int CNTRLTYPE_IO = 1;
    public static final int CNTRLTYPE_DISCOVERY = 2;

    // ONCS bits
    public static final int ONCS_COMPARE = 1;
    public static final int ONCS_DSM = 1 << 2;
    public static final int ONCS_WRITE_ZEROES = 1 << 3;
    /** Reservation Register, Report, Acquire and Release. */
    public static final int ONCS_RESERVATIONS = 1 << 5;

    // OAES: Namespace Attribute Notices
    public static final int OAES_NS_ATTR = 1 << 8;
    /** OAES bit 11: Asymmetric Namespace Access Change Notices. */
    public static final int OAES_ANA_CHANGE = 1 << 11;
    // OAES bit 31: Discovery Log Page Change Notices (a discovery controller sends them)
    public static final int OAES_DISCOVERY_LOG_CHANGE = 1 << 31;

    // LPA: bit 1 command effects... bit 2 extended data for Get Log Page
    public static final int LPA_EXTENDED = 1 << 2;
    /** The Commands Supported and Effects log page (05h) is served. */
    public static final int LPA_COMMAND_EFFECTS = 1 << 1;

    /** SGLS: bit 0-1 = 01b SGLs supported, bit 2 keyed SGL data block, bit 20 offset-based addressing (in-capsule). */
    public static final int SGLS_SUPPORTED = 1;
    public static final int SGLS_KEYED = 1 << 2;
    public static final int SGLS_OFFSET = 1 << 20;

    @Override
    public int length() { return LENGTH; }

    public int vid() { return u16(VID); }
    public IdentifyController vid(int v) { u16(VID, v); return this; }
    public int ssvid() { return u16(SSVID); }
    public IdentifyController ssvid(int v) { u16(SSVID, v); return this; }
    public String serialNumber() { return spaceString(SN, 20); }
    public IdentifyController serialNumber(String v) { spaceString(SN, 20, v); return this; }
    public String modelNumber() { return spaceString(MN, 40); }
    public IdentifyController modelNumber(String v) { spaceString(MN, 40, v); return this; }
    public String firmwareRevision() { return spaceString(FR, 8); }
    public IdentifyController firmwareRevision(String v) { spaceString(FR, 8, v); return this; }
    public int rab() { return u8(RAB); }
    public IdentifyController rab(int v) { u8(RAB, v); return this; }
    public int cmic() { return u8(CMIC); }
    public IdentifyController cmic(int v) { u8(CMIC, v); return this; }
    /** Maximum data transfer size as a power of two in units of the minimum page size (0 = no limit). */
    public int mdts() { return u8(MDTS); }
    public IdentifyController mdts(int v) { u8(MDTS, v); return this; }
    public int cntlid() { return u16(CNTLID); }
    public IdentifyController cntlid(int v) { u16(CNTLID, v); return this; }
    public long version() { return u32(VER); }
    public IdentifyController version(long v) { u32(VER, v); return this; }
    public long oaes() { return u32(OAES); }
    public IdentifyController oaes(long v) { u32(OAES, v); return this; }
    public long ctratt() { return u32(CTRATT); }
    public IdentifyController ctratt(long v) { u32(CTRATT, v); return this; }
    public int controllerType() { return u8(CNTRLTYPE); }
    public IdentifyController controllerType(int v) { u8(CNTRLTYPE, v); return this; }
    public int oacs() { return u16(OACS); }
    public IdentifyController oacs(int v) { u16(OACS, v); return this; }
    /** Abort Command Limit, 0-based. */
    public int acl() { return u8(ACL); }
    public IdentifyController acl(int v) { u8(ACL, v); return this; }
    /** Asynchronous Event Request Limit, 0-based. */
    public int aerl() { return u8(AERL); }
    public IdentifyController aerl(int v) { u8(AERL, v); return this; }
    public int frmw() { return u8(FRMW); }
    public IdentifyController frmw(int v) { u8(FRMW, v); return this; }
    public int lpa() { return u8(LPA); }
    public IdentifyController lpa(int v) { u8(LPA, v); return this; }
    /** Error Log Page Entries, 0-based. */
    public int elpe() { return u8(ELPE); }
    public IdentifyController elpe(int v) { u8(ELPE, v); return this; }
    /** Keep Alive Support: granularity in 100 ms units; 0 means keep alive is not supported. */
    public int kas() { return u16(KAS); }
    public IdentifyController kas(int v) { u16(KAS, v); return this; }
    public int sqes() { return u8(SQES); }
    public IdentifyController sqes(int v) { u8(SQES, v); return this; }
    public int cqes() { return u8(CQES); }
    public IdentifyController cqes(int v) { u8(CQES, v); return this; }
    public int maxcmd() { return u16(MAXCMD); }
    public IdentifyController maxcmd(int v) { u16(MAXCMD, v); return this; }
    /** Number of Namespaces: the largest valid NSID. */
    public long nn() { return u32(NN); }
    public IdentifyController nn(long v) { u32(NN, v); return this; }
    public int oncs() { return u16(ONCS); }
    public IdentifyController oncs(int v) { u16(ONCS, v); return this; }
    public int fuses() { return u16(FUSES); }
    /** VWC bit 0: a volatile write cache is present. */
    public static final int VWC_PRESENT = 0x1;
    /** VWC bits 2:1 = 11b: Flush accepts NSID FFFFFFFFh (every namespace). */
    public static final int VWC_FLUSH_BROADCAST = 0x6;

    public int vwc() { return u8(VWC); }
    public IdentifyController vwc(int v) { u8(VWC, v); return this; }
    public int awupf() { return u16(AWUPF); }
    public long sgls() { return u32(SGLS); }
    public IdentifyController sgls(long v) { u32(SGLS, v); return this; }
    public long mnan() { return u32(MNAN); }
    public IdentifyController mnan(long v) { u32(MNAN, v); return this; }
    public String subnqn() { return nulString(SUBNQN, 256); }
    public IdentifyController subnqn(String v) { nulString(SUBNQN, 256, v); return this; }
    /** I/O Queue Command Capsule Supported Size, in 16-byte units (SQE + in-capsule data). */
    public long ioccsz() { return u32(IOCCSZ); }
    public IdentifyController ioccsz(long v) { u32(IOCCSZ, v); return this; }
    /** I/O Queue Response Capsule Supported Size, in 16-byte units. */
    public long iorcsz() { return u32(IORCSZ); }
    public IdentifyController iorcsz(long v) { u32(IORCSZ, v); return this; }
    /** In Capsule Data Offset, in 16-byte units from the end of the SQE. */
    public int icdoff() { return u16(ICDOFF); }
    public IdentifyController icdoff(int v) { u16(ICDOFF, v); return this; }
    /** Controller attributes: bit 0 dynamic (0) or static (1) controller model. */
    public int fcatt() { return u8(FCATT); }
    public IdentifyController fcatt(int v) { u8(FCATT, v); return this; }
    /** Maximum SGL Data Block Descriptors. */
    public int msdbd() { return u8(MSDBD); }
    public IdentifyController msdbd(int v) { u8(MSDBD, v); return this; }
    /** Power state 0 maximum power, centiwatts. */
    public int psd0MaxPower() { return u16(PSD0); }
    public IdentifyController psd0MaxPower(int v) { u16(PSD0, v); return this; }
    /** ANA Transition Time, seconds: the longest a group stays in the change state. */
    public int anatt() { return u8(ANATT); }
    public IdentifyController anatt(int v) { u8(ANATT, v); return this; }
    public int cqt() { return u16(CQT); }
    public IdentifyController cqt(int v) { u16(CQT, v); return this; }
    public int anacap() { return u8(ANACAP); }
    public IdentifyController anacap(int v) { u8(ANACAP, v); return this; }
    /** ANA Group Identifier Maximum: the largest ANAGRPID. */
    public long anagrpmax() { return u32(ANAGRPMAX); }
    public IdentifyController anagrpmax(long v) { u32(ANAGRPMAX, v); return this; }
    /** Number of ANA Group Identifiers: how many groups the ANA log may describe. */
    public long nanagrpid() { return u32(NANAGRPID); }
    public IdentifyController nanagrpid(long v) { u32(NANAGRPID, v); return this; }
}
