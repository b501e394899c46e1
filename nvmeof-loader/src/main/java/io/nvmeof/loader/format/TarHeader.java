package io.nvmeof.loader.format;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The 512-byte tar header (POSIX ustar, with the GNU and PAX extensions), read in place. Offsets as POSIX.1-2001
 * ({@code pax}) gives them: name 0 (100), mode 100, uid 108, gid 116, size 124 (12), mtime 136, chksum 148 (8),
 * typeflag 156, linkname 157, magic 257 (6), version 263, uname 265, gname 297, devmajor 329, devminor 337,
 * prefix 345 (155).
 */
public final class TarHeader {
    public static final int BLOCK = 512;
    public static final byte TYPE_FILE = '0';
    public static final byte TYPE_FILE_OLD = 0;
    public static final byte TYPE_CONTIGUOUS = '7';
    public static final byte TYPE_PAX = 'x';
    public static final byte TYPE_PAX_GLOBAL = 'g';
    public static final byte TYPE_GNU_LONGNAME = 'L';
    public static final byte TYPE_GNU_LONGLINK = 'K';

    private TarHeader() {
    }

    public static boolean isZeroBlock(byte[] h, int off) {
        for (int i = off; i < off + BLOCK; i++) {
            if (h[i] != 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Why this header's checksum is wrong, or null if it is right. The sum of the header's bytes with the checksum
     * field taken as spaces; both the unsigned sum (POSIX) and the signed one (old Sun and GNU tars) are accepted,
     * as GNU tar accepts both.
     */
    public static String checksumProblem(byte[] h, int off) {
        long stored = parseOctal(h, off + 148, 8);
        if (stored < 0) {
            return "tar header checksum field is not an octal number (" + field(h, off + 148, 8) + ")";
        }
        // The checksum field counts as 8 spaces. The loader checks every member it reads, so the common case (an
        // unsigned sum that matches) is one pass the JIT can vectorise; the signed sum only when it does not match.
        int unsigned = 8 * ' ';
        for (int i = off; i < off + 148; i++) {
            unsigned += h[i] & 0xFF;
        }
        for (int i = off + 156; i < off + BLOCK; i++) {
            unsigned += h[i] & 0xFF;
        }
        if (stored == unsigned) {
            return null;
        }
        int signed = 8 * ' ';
        for (int i = 0; i < BLOCK; i++) {
            if (i < 148 || i >= 156) {
                signed += h[off + i];
            }
        }
        if (stored == signed) {
            return null;
        }
        return "tar header checksum is " + stored + " but the header's bytes sum to " + unsigned;
    }

    /** The same check on a header in a buffer (the loader re-checks headers it reads). */
    public static String checksumProblem(ByteBuffer buf, int off) {
        byte[] h = new byte[BLOCK];
        buf.get(off, h);
        return checksumProblem(h, 0);
    }

    public static byte type(byte[] h, int off) {
        return h[off + 156];
    }

    /** The size field: octal, or base-256 when its first byte has the high bit set (GNU, star); -1 if malformed. */
    public static long size(byte[] h, int off) {
        if ((h[off + 124] & 0x80) != 0) {
            if ((h[off + 124] & 0x40) != 0) {
                return -1; // negative base-256
            }
            long v = h[off + 124] & 0x3F;
            for (int i = 1; i < 12; i++) {
                if ((v >>> 55) != 0) {
                    return -1;
                }
                v = (v << 8) | (h[off + 124 + i] & 0xFF);
            }
            return v;
        }
        return parseOctal(h, off + 124, 12);
    }

    /** The member's name from the header alone: POSIX ustar joins prefix and name; GNU keeps prefix for other uses. */
    public static String name(byte[] h, int off) {
        String name = cString(h, off, 100);
        boolean posix = h[off + 257] == 'u' && h[off + 258] == 's' && h[off + 259] == 't' && h[off + 260] == 'a'
                && h[off + 261] == 'r' && h[off + 262] == 0;
        if (posix && h[off + 345] != 0) {
            return cString(h, off + 345, 155) + "/" + name;
        }
        return name;
    }

    static String cString(byte[] h, int off, int len) {
        int end = off;
        while (end < off + len && h[end] != 0) {
            end++;
        }
        return new String(h, off, end - off, StandardCharsets.UTF_8);
    }

    /** Octal digits, optionally led by spaces or NULs and ended by a space or NUL; -1 if anything else is there. */
    static long parseOctal(byte[] h, int off, int len) {
        int i = off;
        int end = off + len;
        while (i < end && (h[i] == ' ' || h[i] == 0)) {
            i++;
        }
        if (i == end) {
            return 0;
        }
        long v = 0;
        boolean digits = false;
        for (; i < end; i++) {
            byte b = h[i];
            if (b >= '0' && b <= '7') {
                v = (v << 3) | (b - '0');
                digits = true;
            } else if (b == ' ' || b == 0) {
                break;
            } else {
                return -1;
            }
        }
        for (; i < end; i++) {
            if (h[i] != ' ' && h[i] != 0) {
                return -1;
            }
        }
        return digits ? v : -1;
    }

    static String field(byte[] h, int off, int len) {
        StringBuilder s = new StringBuilder("'");
        for (int i = off; i < off + len; i++) {
            byte b = h[i];
            s.append(b >= 0x20 && b < 0x7F ? (char) b : '.');
        }
        return s.append('\'').toString();
    }

    /** Bytes a member's data takes in the archive: its size rounded up to whole blocks. */
    public static long padded(long size) {
        return (size + BLOCK - 1) & ~(long) (BLOCK - 1);
    }
}
