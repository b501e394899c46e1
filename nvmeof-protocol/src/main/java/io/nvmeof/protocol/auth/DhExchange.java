package io.nvmeof.protocol.auth;

import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PublicKey;
import java.security.SecureRandom;
import javax.crypto.KeyAgreement;
import javax.crypto.interfaces.DHPublicKey;
import javax.crypto.spec.DHParameterSpec;
import javax.crypto.spec.DHPublicKeySpec;

/**
 * One side's ephemeral Diffie-Hellman key in an RFC 7919 group, from the JDK's DH: its public value as DH-HMAC-CHAP
 * sends it (big-endian, the prime's length) and the shared secret with the other side's value (the same length,
 * zero-padded in front, as the Linux kernel's kpp computes it).
 */
public final class DhExchange {
    private final DhGroup group;
    private final KeyPair pair;

    private DhExchange(DhGroup group, KeyPair pair) {
        this.group = group;
        this.pair = pair;
    }

    /** A fresh key pair in {@code group} (not {@link DhGroup#NULL}). */
    public static DhExchange generate(DhGroup group, SecureRandom random) {
        if (group == DhGroup.NULL) {
            throw new IllegalArgumentException("the null group has no key exchange");
        }
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("DH");
            g.initialize(new DHParameterSpec(group.prime(), group.generator()), random);
            return new DhExchange(group, g.generateKeyPair());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK cannot generate a " + group.groupName() + " key", e);
        }
    }

    public DhGroup group() { return group; }

    /** This side's public value, {@link DhGroup#length()} bytes. */
    public byte[] publicValue() {
        return fixedLength(((DHPublicKey) pair.getPublic()).getY(), group.length());
    }

    /**
     * The shared secret with the peer's public value.
     *
     * @throws IllegalArgumentException when the value is not {@link DhGroup#length()} bytes or not a valid public
     *                                  value of the group (1 or p-1 and the like, which the JDK's DH refuses)
     */
    public byte[] sharedSecret(byte[] peerValue) {
        if (peerValue.length != group.length()) {
            throw new IllegalArgumentException("a " + group.groupName() + " public value is " + group.length()
                    + " bytes, not " + peerValue.length);
        }
        BigInteger y = new BigInteger(1, peerValue);
        BigInteger p = group.prime();
        if (y.compareTo(BigInteger.ONE) <= 0 || y.compareTo(p.subtract(BigInteger.ONE)) >= 0) {
            throw new IllegalArgumentException("the peer's " + group.groupName() + " public value is out of range");
        }
        try {
            PublicKey peer = KeyFactory.getInstance("DH").generatePublic(new DHPublicKeySpec(y, p, group.generator()));
            KeyAgreement ka = KeyAgreement.getInstance("DH");
            ka.init(pair.getPrivate());
            ka.doPhase(peer, true);
            byte[] s = ka.generateSecret();
            return s.length == group.length() ? s : fixedLength(new BigInteger(1, s), group.length());
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("the peer's " + group.groupName() + " public value was refused: "
                    + e.getMessage(), e);
        }
    }

    static byte[] fixedLength(BigInteger v, int length) {
        byte[] b = v.toByteArray();
        if (b.length == length) {
            return b;
        }
        byte[] out = new byte[length];
        if (b.length > length) {
            // A leading sign byte of zero.
            System.arraycopy(b, b.length - length, out, 0, length);
        } else {
            System.arraycopy(b, 0, out, length - b.length, b.length);
        }
        return out;
    }
}
