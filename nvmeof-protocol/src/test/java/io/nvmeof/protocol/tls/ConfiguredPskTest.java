package io.nvmeof.protocol.tls;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The PSK interchange format and the TP 8011 derivations, against what nvme-cli and libnvme produce. The interchange
 * string is what {@code nvme gen-tls-key --secret=000102..1f --hmac=1} (nvme-cli 2.13, libnvme 1.13, Debian 13)
 * printed. The PSKs were computed separately (Python's hmac and hashlib, HKDF written out from RFC 5869, the info as
 * RFC 8446 and as libnvme 1.13's source build it). The legacy version 1 identity, whose digest is an HMAC keyed with
 * the retained PSK, is the one {@code nvme gen-tls-key --identity=1 --insert} put in Linux 6.12's {@code .nvme} keyring
 * (/proc/keys in the guest), which checks the legacy retained PSK; the keyring does not let the TLS PSKs themselves be
 * read back, so those are checked end to end by the kernel host's TLS handshakes with our target.
 */
class ConfiguredPskTest {
    static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
    static final String SUBSYSTEM = "nqn.2026-12.io.nvmeof:tls";
    static final String NVME_CLI_KEY = "NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:";
    static final byte[] SECRET = HexFormat.of().parseHex(
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");

    @Test
    void theInterchangeFormatReadsAndWritesAsNvmeCliDoes() {
        ConfiguredPsk psk = ConfiguredPsk.parse(NVME_CLI_KEY);
        assertEquals(TlsPskHash.SHA256, psk.hash());
        assertEquals(NVME_CLI_KEY, ConfiguredPsk.format(TlsPskHash.SHA256, SECRET));
        assertTrue(psk.sameAs(ConfiguredPsk.parse(NVME_CLI_KEY.substring(0, NVME_CLI_KEY.length() - 1))),
                "the final colon may be left out");
        assertFalse(psk.toString().contains("AAEC"), "toString never shows the key");
    }

    @Test
    void retainedAndTlsPsksForBothIdentityVersions() {
        ConfiguredPsk psk = ConfiguredPsk.parse(NVME_CLI_KEY);
        assertEquals("524d2e2978a6fa38ff54928586affb66666c59d89c0146a2be12d8a8b210bfc1",
                HexFormat.of().formatHex(psk.retained(HOST)));
        PskIdentity v0 = psk.identity(HOST, SUBSYSTEM, 0);
        assertEquals("NVMe0R01 " + HOST + " " + SUBSYSTEM, v0.toString());
        assertEquals("0a03eae4b6bd8f495bfed46f9d2f6a26a1177dc9cc0a0755e19f0a75a3b7585e",
                HexFormat.of().formatHex(psk.tlsPsk(v0)));
        PskIdentity v1 = psk.identity(HOST, SUBSYSTEM, 1);
        assertEquals("NVMe1R01 " + HOST + " " + SUBSYSTEM + " 71id8CO/Svvee6dnS5KyrudiJKO7+tqWT5S5rcNk8TI=",
                v1.toString());
        assertEquals("63dd620a9d23dbedfceb56f2a1ae15e4fc2eb7483893223aac00f1bf400aae1d",
                HexFormat.of().formatHex(psk.tlsPsk(v1)));
    }

    @Test
    void theLegacyDerivationOfNvmeCli215AndEarlier() {
        ConfiguredPsk psk = ConfiguredPsk.parse(NVME_CLI_KEY).derivedAs(TlsPskDerivation.LEGACY);
        assertEquals("8e9302507b7024173ca73e5bbd78548453c242cc7b4ba410efc5c7d31ae291ad",
                HexFormat.of().formatHex(psk.retained(HOST)));
        PskIdentity v0 = psk.identity(HOST, SUBSYSTEM, 0);
        assertEquals("16886a37ae09abae91be52c1531a1fc6d9feb82ba819ba833faa45212b62c12b",
                HexFormat.of().formatHex(psk.tlsPsk(v0)));
        PskIdentity v1 = psk.identity(HOST, SUBSYSTEM, 1);
        assertEquals("NVMe1R01 " + HOST + " " + SUBSYSTEM + " hgfEzqP6xl4ugQYPqj6fh/wIaI3XFzCa5dgcAH8B5W0=",
                v1.toString(), "as nvme-cli 2.13 named it in the kernel's keyring");
        assertEquals("c16c872dbca8307222e880c63ce78562cf8b2f75f48a5ee7eb52fe6ef194694c",
                HexFormat.of().formatHex(psk.tlsPsk(v1)));
        assertNull(ConfiguredPsk.parse(NVME_CLI_KEY).tlsPsk(v1), "a legacy digest is not a standard key's");
    }

    @Test
    void anUntransformedKeyIsItsOwnRetainedPskAndAFortyEightByteOneUsesSha384() {
        byte[] key = new byte[48];
        key[0] = 7;
        ConfiguredPsk psk = ConfiguredPsk.parse(ConfiguredPsk.format(null, key));
        assertArrayEquals(key, psk.retained(HOST));
        assertEquals(TlsPskHash.SHA384, psk.hash());
        PskIdentity id = psk.identity(HOST, SUBSYSTEM, 0);
        assertTrue(id.toString().startsWith("NVMe0R02 "));
        assertEquals(48, psk.tlsPsk(id).length);
    }

    @Test
    void identitiesOfAnotherKeyHashOrNqnGetNoKey() {
        ConfiguredPsk psk = ConfiguredPsk.parse(NVME_CLI_KEY);
        PskIdentity v1 = psk.identity(HOST, SUBSYSTEM, 1);
        PskIdentity otherSubsystem = new PskIdentity(1, TlsPskHash.SHA256, HOST, "nqn.2026-12.io.nvmeof:other",
                v1.digest());
        assertNull(psk.tlsPsk(otherSubsystem), "a version 1 digest binds the key to both NQNs");
        assertNull(psk.tlsPsk(new PskIdentity(0, TlsPskHash.SHA384, HOST, SUBSYSTEM, null)), "another hash");
        byte[] other = SECRET.clone();
        other[31] ^= 1;
        ConfiguredPsk otherKey = ConfiguredPsk.parse(ConfiguredPsk.format(TlsPskHash.SHA256, other));
        assertNull(otherKey.tlsPsk(v1), "another key's digest");
    }

    @Test
    void identitiesParseAsSentAndGarbageIsNone() {
        PskIdentity v1 = ConfiguredPsk.parse(NVME_CLI_KEY).identity(HOST, SUBSYSTEM, 1);
        assertEquals(v1, PskIdentity.parse(v1.bytes()));
        PskIdentity v0 = PskIdentity.parse(("NVMe0R02 " + HOST + " " + SUBSYSTEM).getBytes(StandardCharsets.UTF_8));
        assertEquals(TlsPskHash.SHA384, v0.hash());
        assertEquals(SUBSYSTEM, v0.subsystemNqn());
        for (String bad : new String[] {"", "NVMe0R01", "NVMe2R01 h s", "NVMe0R03 h s", "NVMe0R01 h", "NVMe0R01 h s x",
                "NVMe1R01 h s", "NVMe0R01  s", "client1", "NVMe0X01 h s"}) {
            assertNull(PskIdentity.parse(bad.getBytes(StandardCharsets.UTF_8)), bad);
        }
        assertNull(PskIdentity.parse(new byte[PskIdentity.MAX_LENGTH + 1]));
        // Review finding: a multi-byte character made the text shorter than its bytes, and parsing threw.
        byte[] emoji = {'N', 'V', 'M', 'e', '0', 'R', (byte) 0xF0, (byte) 0x9F, (byte) 0x98, (byte) 0x80};
        assertNull(PskIdentity.parse(emoji));
    }

    @Test
    void badKeysAreRefusedSayingWhatIsWrongWithoutTheKey() {
        String body = NVME_CLI_KEY.substring("NVMeTLSkey-1:01:".length());
        String badCrc = "NVMeTLSkey-1:01:" + body.replace("KfiaR", "KfiaS");
        for (String[] c : new String[][] {
                {"DHHC-1:01:" + body, "starts with 'NVMeTLSkey-1:'"},
                {"NVMeTLSkey-1:03:" + body, "hash 03 is unknown"},
                {"NVMeTLSkey-1:02:" + body, "is 48 bytes"},
                {"NVMeTLSkey-1:01:not*base64:", "not valid base64"},
                {badCrc, "CRC-32 does not match"},
                {"NVMeTLSkey-1:x", "has the form"}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ConfiguredPsk.parse(c[0]));
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
            assertFalse(e.getMessage().contains("AAECAw"), "the message never quotes the key: " + e.getMessage());
        }
    }
}
