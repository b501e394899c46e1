package io.nvmeof.protocol;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Base64;
import java.util.zip.CRC32;

/**
 * The text form nvme-cli gives NVMe keys, DH-HMAC-CHAP secrets ({@code DHHC-1:xx:...:}) and TLS PSKs
 * ({@code NVMeTLSkey-1:xx:...:}) alike: a prefix, a two-hex-digit field (how the key is transformed), then base64 of the
 * key followed by its CRC-32 (zlib's) little-endian, and a final colon (taken as optional). Errors never quote the key.
 */
public final class KeyInterchange {
    /**
     * A key read from its text form.
     *
     * @param field the two-digit field's value
     * @param key   the key bytes, its CRC checked
     */
    public record Decoded(int field, String fieldText, byte[] key) {
    }

    private KeyInterchange() {
    }

    /**
     * Reads {@code text}; {@code what} names the key in messages ("DH-HMAC-CHAP secret"), {@code tool} the command that
     * prints it, and {@code validLength} says which key lengths the field allows (the message when not).
     *
     * @throws IllegalArgumentException saying what is wrong, never quoting the key
     */
    public static Decoded decode(String text, String prefix, String what, String tool,
            java.util.function.BiFunction<Integer, Integer, String> lengthRefusal) {
        if (text == null) {
            throw new IllegalArgumentException("no " + what + " given");
        }
        String t = text.trim();
        if (!t.startsWith(prefix)) {
            throw new IllegalArgumentException("a " + what + " starts with '" + prefix + "' (as '" + tool
                    + "' prints it)");
        }
        String rest = t.substring(prefix.length());
        if (rest.length() < 4 || rest.charAt(2) != ':' || Character.digit(rest.charAt(0), 16) < 0
                || Character.digit(rest.charAt(1), 16) < 0) {
            // Two hex digits each checked: "+1" parses as a number, but it is no field.
            throw new IllegalArgumentException("a " + what + " has the form " + prefix + "xx:<base64>: with xx two"
                    + " hex digits");
        }
        int field = Integer.parseInt(rest.substring(0, 2), 16);
        String b64 = rest.substring(3);
        if (b64.endsWith(":")) {
            b64 = b64.substring(0, b64.length() - 1);
        }
        byte[] raw;
        try {
            raw = Base64.getDecoder().decode(b64);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the key of a " + what + " is not valid base64");
        }
        try {
            int length = raw.length - 4;
            String refusal = lengthRefusal.apply(field, Math.max(0, length));
            if (refusal != null) {
                throw new IllegalArgumentException(refusal);
            }
            CRC32 crc = new CRC32();
            crc.update(raw, 0, length);
            if (ByteBuffer.wrap(raw, length, 4).order(ByteOrder.LITTLE_ENDIAN).getInt() != (int) crc.getValue()) {
                throw new IllegalArgumentException("the " + what + "'s CRC-32 does not match its key: it was mistyped"
                        + " or cut; copy it again from '" + tool + "'");
            }
            return new Decoded(field, rest.substring(0, 2), Arrays.copyOf(raw, length));
        } finally {
            Arrays.fill(raw, (byte) 0);
        }
    }

    /** The text form of {@code key} with {@code field}. */
    public static String encode(String prefix, int field, byte[] key) {
        CRC32 crc = new CRC32();
        crc.update(key);
        byte[] raw = ByteBuffer.allocate(key.length + 4).order(ByteOrder.LITTLE_ENDIAN).put(key)
                .putInt((int) crc.getValue()).array();
        try {
            return String.format("%s%02x:%s:", prefix, field, Base64.getEncoder().encodeToString(raw));
        } finally {
            Arrays.fill(raw, (byte) 0);
        }
    }
}
