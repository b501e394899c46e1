package io.nvmeof.conformance;

import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.protocol.regs.ControllerRegisters;
import java.io.ByteArrayOutputStream;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Writes the seed inputs of {@link TcpTargetFuzzTest} (well-formed streams for each stage, so the fuzzer starts from
 * PDUs the target accepts): {@code ./mvnw test -pl conformance-tests -am -Dtest=TcpTargetFuzzSeeds
 * -Dsurefire.failIfNoSpecifiedTests=false -Dfuzz.writeSeeds=true}. The files are kept in the repository; this is how
 * they were made.
 */
class TcpTargetFuzzSeeds {
    private static final Path DIR = Path.of("src/test/resources/io/nvmeof/conformance/TcpTargetFuzzTestInputs/pduStream");
    private static final String DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";

    @Test
    @EnabledIfSystemProperty(named = "fuzz.writeSeeds", matches = "true")
    void write() throws Exception {
        Files.createDirectories(DIR);
        RawTcpHost plain = RawTcpHost.encoder(false, false);
        RawTcpHost digests = RawTcpHost.encoder(true, true);

        seed("stage0-icreq", 0, 0, RawTcpHost.icReq(0, 0));
        seed("stage0-icreq-connect-admin", 0, 0, RawTcpHost.icReq(0, 0), connect(plain, 0, 0xFFFF, TcpTargetFuzzTest.FUZZ_NQN),
                propertySet(plain, ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT),
                plain.capsule(cid(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), 3), null));
        seed("stage0-discovery", 0, 0, RawTcpHost.icReq(0, 0), connect(plain, 0, 0xFFFF, DISCOVERY_NQN),
                propertySet(plain, ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT),
                plain.capsule(cid(logPage(Opcodes.LOG_DISCOVERY, 4096), 3), null));
        seed("stage0-digests", 0, 0, RawTcpHost.icReq(0, 3), connect(digests, 0, 0xFFFF, TcpTargetFuzzTest.FUZZ_NQN));
        seed("stage1-connect-admin", 1, 0, connect(plain, 0, 0xFFFF, TcpTargetFuzzTest.FUZZ_NQN),
                propertyGet(plain, ControllerRegisters.CAP, 8));
        seed("stage1-connect-io-unknown-controller", 1, 0, connect(plain, 1, 0x1234, TcpTargetFuzzTest.FUZZ_NQN));
        seed("stage1-digests-hpda", 1, 3 | (7 << 2), connect(digests, 0, 0xFFFF, TcpTargetFuzzTest.FUZZ_NQN),
                propertySet(digests, ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT),
                digests.capsule(cid(RawTcpHost.identifySqe(Opcodes.CNS_NAMESPACE, 1), 3), null));

        seed("stage2-identify", 2, 0,
                plain.capsule(cid(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), 10), null),
                plain.capsule(cid(RawTcpHost.identifySqe(Opcodes.CNS_NAMESPACE, 1), 11), null),
                plain.capsule(cid(RawTcpHost.identifySqe(Opcodes.CNS_ACTIVE_NAMESPACE_LIST, 0), 12), null),
                plain.capsule(cid(RawTcpHost.identifySqe(Opcodes.CNS_NAMESPACE_DESCRIPTORS, 2), 13), null));
        seed("stage2-logs", 2, 0,
                plain.capsule(cid(logPage(Opcodes.LOG_ERROR_INFORMATION, 64), 20), null),
                plain.capsule(cid(logPage(Opcodes.LOG_SMART_HEALTH, 512), 21), null),
                plain.capsule(cid(logPage(Opcodes.LOG_CHANGED_NAMESPACE_LIST, 4096), 22), null),
                plain.capsule(cid(logPage(Opcodes.LOG_COMMAND_EFFECTS, 4096), 23), null));
        seed("stage2-features-aer-keepalive", 2, 0,
                plain.capsule(cid(features(Opcodes.ADMIN_GET_FEATURES, Opcodes.FEAT_NUMBER_OF_QUEUES, 0), 30), null),
                plain.capsule(cid(features(Opcodes.ADMIN_SET_FEATURES, Opcodes.FEAT_NUMBER_OF_QUEUES, 0x00030003), 31), null),
                plain.capsule(cid(features(Opcodes.ADMIN_SET_FEATURES, Opcodes.FEAT_KEEP_ALIVE_TIMER, 5000), 32), null),
                plain.capsule(cid(features(Opcodes.ADMIN_GET_FEATURES, Opcodes.FEAT_VOLATILE_WRITE_CACHE, 0), 33), null),
                plain.capsule(cid(admin(Opcodes.ADMIN_ASYNC_EVENT_REQUEST), 34), null),
                plain.capsule(cid(admin(Opcodes.ADMIN_KEEP_ALIVE), 35), null),
                plain.capsule(cid(admin(Opcodes.ADMIN_ABORT), 36), null),
                plain.capsule(cid(admin(0xC0), 37), null),
                propertyGet(plain, ControllerRegisters.CSTS, 4));

        byte[] block = new byte[4096];
        for (int i = 0; i < block.length; i++) {
            block[i] = (byte) (i * 7);
        }
        seed("stage3-read-write", 3, 0,
                plain.capsule(cid(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 8, 8, 4096, true), 40), block),
                plain.capsule(cid(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 8, 8, 4096, false), 41), null),
                plain.capsule(cid(RawTcpHost.rwSqe(Opcodes.IO_COMPARE, 1, 8, 8, 4096, true), 42), block),
                plain.capsule(cid(RawTcpHost.rwSqe(Opcodes.IO_READ, 2, 0, 1, 4096, false), 43), null));
        byte[] twoBlocks = new byte[16384];
        seed("stage3-write-r2t", 3, 0,
                plain.capsule(cid(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 64, 32, 16384, false), 50), null),
                plain.h2cData(50, 63, 0, java.util.Arrays.copyOf(twoBlocks, 8192), false),
                plain.h2cData(50, 63, 8192, java.util.Arrays.copyOf(twoBlocks, 8192), true));
        byte[] ranges = new byte[32];
        UnsafeBuffer r = new UnsafeBuffer(ranges);
        r.putInt(4, 16, ByteOrder.LITTLE_ENDIAN); // range 0: 16 blocks at LBA 0
        r.putLong(8, 0, ByteOrder.LITTLE_ENDIAN);
        r.putInt(20, 8, ByteOrder.LITTLE_ENDIAN); // range 1: 8 blocks at LBA 1000
        r.putLong(24, 1000, ByteOrder.LITTLE_ENDIAN);
        byte[] dsm = RawTcpHost.sqe();
        RawTcpHost.cmd(dsm).opcode(Opcodes.IO_DATASET_MANAGEMENT).nsid(1).cdw10(1).cdw11(1 << 2).cid(60);
        RawTcpHost.sgl(dsm).inCapsule(0, ranges.length);
        byte[] flush = RawTcpHost.sqe();
        RawTcpHost.cmd(flush).opcode(Opcodes.IO_FLUSH).nsid(1).cid(61);
        byte[] zeroes = RawTcpHost.sqe();
        RawTcpHost.cmd(zeroes).opcode(Opcodes.IO_WRITE_ZEROES).nsid(1).slba(100).blockCount(64).cid(62);
        seed("stage3-dsm-flush-zeroes", 3, 0, plain.capsule(dsm, ranges), plain.capsule(flush, null),
                plain.capsule(zeroes, null));
    }

    private static byte[] cid(byte[] sqe, int cid) {
        RawTcpHost.cmd(sqe).cid(cid);
        return sqe;
    }

    private static byte[] connect(RawTcpHost enc, int qid, int cntlid, String nqn) {
        return enc.capsule(cid(RawTcpHost.connectSqe(qid, 31, 0), 1),
                RawTcpHost.connectData(cntlid, nqn, RawTcpHost.HOSTNQN));
    }

    private static byte[] propertySet(RawTcpHost enc, int offset, long value) {
        byte[] b = RawTcpHost.sqe();
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(b), 0).fctype(Opcodes.FCTYPE_PROPERTY_SET)
                .propertySize(4).propertyOffset(offset).propertyValue(value).opcode(Opcodes.FABRICS);
        return enc.capsule(cid(b, 2), null);
    }

    private static byte[] propertyGet(RawTcpHost enc, int offset, int size) {
        byte[] b = RawTcpHost.sqe();
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(b), 0).fctype(Opcodes.FCTYPE_PROPERTY_GET)
                .propertySize(size).propertyOffset(offset).opcode(Opcodes.FABRICS);
        return enc.capsule(cid(b, 4), null);
    }

    private static byte[] logPage(int lid, int bytes) {
        byte[] b = RawTcpHost.sqe();
        RawTcpHost.cmd(b).opcode(Opcodes.ADMIN_GET_LOG_PAGE).logPage(lid, bytes, 0);
        RawTcpHost.sgl(b).transportBlock(bytes);
        return b;
    }

    private static byte[] features(int opcode, int fid, int value) {
        byte[] b = RawTcpHost.sqe();
        RawTcpHost.cmd(b).opcode(opcode).cdw10(fid).cdw11(value);
        return b;
    }

    private static byte[] admin(int opcode) {
        byte[] b = RawTcpHost.sqe();
        RawTcpHost.cmd(b).opcode(opcode);
        return b;
    }

    /** One seed: the stage byte, the options byte, then the PDUs. */
    private static void seed(String name, int stage, int options, byte[]... pdus) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(stage);
        out.write(options);
        for (byte[] p : pdus) {
            out.write(p);
        }
        Files.write(DIR.resolve(name), out.toByteArray());
    }
}
