package io.nvmeof.protocol.auth;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.security.SecureRandom;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * DH-HMAC-CHAP's secrets and computations against values from outside this project: secrets published by other
 * projects' test suites (ceph-nvmeof's tests/test_dhchap.py, which nvme-cli generated; blktests nvme/045's invalid
 * one), and responses computed separately with Python's hmac and hashlib from the formulas of the Linux kernel's
 * drivers/nvme/common/auth.c and target/auth.c. (The kernel itself checks these against us in the guest suite.)
 */
class DhchapTest {
    static final HexFormat HEX = HexFormat.of();
    static final String HOST4 = "nqn.2014-08.org.nvmexpress:uuid:6488a49c-dfa3-11d4-ac31-b232c6c68a8a";
    static final String HOST11 = "nqn.2014-08.org.nvmexpress:uuid:22207d09-d8af-4ed2-84ec-a6d80b0cf7f5";
    static final String SUB = "nqn.2016-06.io.spdk:cnode1";

    @Test
    void publishedSecretsDecodeToTheirKeys() {
        assertEquals("3163ea731d5483575e6e0f1f3c81a992a6d084b71852ddfd93b5168ab91b95a2",
                HEX.formatHex(DhchapSecret.parse("DHHC-1:00:MWPqcx1Ug1debg8fPIGpkqbQhLcYUt39k7UWirkblaKEH1kE:").transform(HOST4)),
                "transformation 00 uses the key as it is");
        DhchapSecret s6 = DhchapSecret.parse(
                "DHHC-1:02:ULMaRuJ40ui58nK4Qk5b0J89G3unbGb8mBUbt/XSrf18PBPvyL3sivZOINNh2o/fPpXbGg==:");
        assertEquals(48, s6.keyLength());
        assertEquals(DhchapHash.SHA384, s6.transformHash());
        DhchapSecret s5 = DhchapSecret.parse("DHHC-1:03:6EKZcEL86u4vzTE8sCETvskE3pLKE+qOorl9QxrRfLvfOEQ5GvqCzM41U8fFVAz1cs"
                + "+T14PjSpd1J641rfeCC1x2VNg=:");
        assertEquals(64, s5.keyLength());
        // The trailing colon is optional, as the kernel takes it.
        assertTrue(DhchapSecret.parse("DHHC-1:00:MWPqcx1Ug1debg8fPIGpkqbQhLcYUt39k7UWirkblaKEH1kE").sameAs(
                DhchapSecret.parse("DHHC-1:00:MWPqcx1Ug1debg8fPIGpkqbQhLcYUt39k7UWirkblaKEH1kE:")));
    }

    @Test
    void transformedKeysMatchTheKernelsFormula() {
        assertEquals("f3d9abdd313b4a427efb8a8a0e9fe37bb9bf1e000f3c84db67108dd9d52abccc", HEX.formatHex(
                DhchapSecret.parse("DHHC-1:01:Ei7kUrD7iyrjzXDwIZ666sSPBswUk4wDjSQtodytVB5YiBru:").transform(HOST4)));
        assertEquals("680a80c765ad1d919c7b5cc9a7eecbef0af818e3f730475ab8f5f0ea8c07c19bca80b62592f93aaa4cb61e52e07753ac",
                HEX.formatHex(DhchapSecret.parse("DHHC-1:02:ULMaRuJ40ui58nK4Qk5b0J89G3unbGb8mBUbt/XSrf18PBPvyL3sivZOINNh2o"
                        + "/fPpXbGg==:").transform(HOST11)));
        assertEquals("ffd70098fd640d02cf6a578460a01baa6134e9f223c508e0e655cf8038f9526381d3f3f3be2028feb989a3964cb846f73fb3"
                + "a5ada86f506288a3bcf7d02ddfb6", HEX.formatHex(DhchapSecret.parse("DHHC-1:03:6EKZcEL86u4vzTE8sCETvskE3pLKE"
                + "+qOorl9QxrRfLvfOEQ5GvqCzM41U8fFVAz1cs+T14PjSpd1J641rfeCC1x2VNg=:").transform(HOST11)));
    }

    @Test
    void responsesMatchTheKernelsFormula() {
        byte[] c1 = new byte[32];
        byte[] c2 = new byte[32];
        for (int i = 0; i < 32; i++) {
            c1[i] = (byte) i;
            c2[i] = (byte) (0xff - i);
        }
        byte[] kh = DhchapSecret.parse("DHHC-1:01:Ei7kUrD7iyrjzXDwIZ666sSPBswUk4wDjSQtodytVB5YiBru:").transform(HOST4);
        assertEquals("647da7cf6d491801e4ee3b4ea8c072ec92fc7d4843d667b76ce38c9876f5dd2b",
                HEX.formatHex(Dhchap.hostResponse(DhchapHash.SHA256, kh, c1, 1, 0, 0, HOST4, SUB)));
        byte[] kc = DhchapSecret.parse("DHHC-1:01:x7ecfGgIdOEl+J5cJ9JcZHOS2By2Me6eDJUnrsT9MVrCWRYV:").transform(SUB);
        assertEquals("0aa2136d04606f48d20bd6341d477604415437e18625c24ec6a731b67712dabd", HEX.formatHex(kc));
        assertEquals("595aa6cd98a41615e25466d456e72072ea8d3663875d6c34aede5302e6a333c2",
                HEX.formatHex(Dhchap.controllerResponse(DhchapHash.SHA256, kc, c2, 2, 0, SUB, HOST4)));
        byte[] ks = new byte[256];
        java.util.Arrays.fill(ks, (byte) 0x11);
        assertEquals("be0a1de6cd278b6187949df8563c84bb2f052c96d90caf657845c07ac2256276",
                HEX.formatHex(Dhchap.augmentedChallenge(DhchapHash.SHA256, ks, c1)));
    }

    @Test
    void badSecretsAreRefusedWithoutQuotingThem() {
        // blktests nvme/045's "invalid ctrl key": its CRC does not match.
        String bad = "DHHC-1:00:Jc/My1o0qtLCWRp+sHhAVafdfaS7YQOMYhk9zSmlatobqB8C:";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DhchapSecret.parse(bad));
        assertTrue(e.getMessage().contains("CRC"), e.getMessage());
        assertFalse(e.getMessage().contains("Jc/My1o0"), "the message never quotes the secret");
        for (String s : new String[] {"", "DHHC-2:00:abc:", "DHHC-1:04:MWPqcx1Ug1debg8fPIGpkqbQhLcYUt39k7UWirkblaKEH1kE:",
                "DHHC-1:0x:MWPqcx1Ug1debg8fPIGpkqbQhLcYUt39k7UWirkblaKEH1kE:", "DHHC-1:00:!!!!:", "DHHC-1:00:AAAA:",
                "DHHC-1:00"}) {
            assertThrows(IllegalArgumentException.class, () -> DhchapSecret.parse(s), s);
        }
        assertFalse(DhchapSecret.parse("DHHC-1:00:MWPqcx1Ug1debg8fPIGpkqbQhLcYUt39k7UWirkblaKEH1kE:").toString()
                .contains("MWPq"), "toString shows no key");
    }

    @Test
    void aSecretWrittenIsReadBackTheSame() {
        byte[] k = new byte[48];
        new SecureRandom().nextBytes(k);
        DhchapSecret s = DhchapSecret.of(k, DhchapHash.SHA256); // a 48-byte key with 01: Linux takes it
        assertTrue(DhchapSecret.parse(s.representation()).sameAs(s));
    }

    @Test
    void bothSidesOfADhExchangeShareTheSecret() {
        SecureRandom r = new SecureRandom();
        DhExchange a = DhExchange.generate(DhGroup.FFDHE2048, r);
        DhExchange b = DhExchange.generate(DhGroup.FFDHE2048, r);
        assertEquals(256, a.publicValue().length);
        assertArrayEquals(a.sharedSecret(b.publicValue()), b.sharedSecret(a.publicValue()));
        byte[] one = new byte[256];
        one[255] = 1;
        assertThrows(IllegalArgumentException.class, () -> a.sharedSecret(one), "1 is no public value");
        assertThrows(IllegalArgumentException.class, () -> a.sharedSecret(new byte[255]), "a short value");
        byte[] pMinus1 = DhGroup.FFDHE2048.prime().subtract(java.math.BigInteger.ONE).toByteArray();
        assertThrows(IllegalArgumentException.class,
                () -> a.sharedSecret(java.util.Arrays.copyOfRange(pMinus1, pMinus1.length - 256, pMinus1.length)));
    }

    @Test
    void messagesKeepTheSpecsOffsets() {
        byte[] n = new AuthMessages.Negotiate(0x1234, 0, new int[] {1, 2, 3}, new int[] {0, 1, 2, 3, 4, 5}).encode();
        assertEquals(72, n.length, "the Linux host's Negotiate is 72 bytes");
        assertEquals(0x34, n[4] & 0xFF);
        assertEquals(0x12, n[5] & 0xFF);
        assertEquals(1, n[7], "NAPD");
        assertEquals(1, n[8], "AUTHID");
        assertEquals(3, n[10], "HALEN");
        assertEquals(6, n[11], "DHLEN");
        assertEquals(1, n[12], "first hash id at byte 12");
        assertEquals(5, n[42 + 5], "DH ids from byte 42");
        byte[] f = AuthMessages.failure(AuthMessages.ID_FAILURE1, 7, AuthMessages.EXP_HASH_UNUSABLE);
        assertArrayEquals(new byte[] {0, (byte) 0xF1, 0, 0, 7, 0, 1, 4}, f);
        byte[] s1 = AuthMessages.success1(3, 32, null);
        assertEquals(16, s1.length);
        assertNull(AuthMessages.success1Response(s1));
        byte[] napd2 = n.clone();
        napd2[7] = 2;
        assertEquals(AuthMessages.EXP_HASH_UNUSABLE, assertThrows(AuthProtocolException.class,
                () -> AuthMessages.Negotiate.decode(napd2)).explanation(), "nvmet's answer to NAPD other than 1");
    }
}
