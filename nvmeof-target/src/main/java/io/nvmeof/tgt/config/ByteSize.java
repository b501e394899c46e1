package io.nvmeof.tgt.config;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.text.NumberFormat;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sizes as people write them: a number of bytes ({@code 4096}), or a number with a binary unit ({@code 64MiB},
 * {@code 64M}, {@code 1.5GiB}).
 *
 * <p>The one-letter units K, M, G, T, P and the IEC units KiB, MiB, GiB, TiB, PiB are powers of 1024, as in fio,
 * SPDK, dd and truncate. KB, MB, GB, TB and PB are refused: coreutils, nvme-cli's SI sizes and disk vendors read
 * them as powers of 1000, fio and SPDK as powers of 1024, and a namespace 5 % smaller or larger than meant is not a
 * guess to make silently. The refusal names both readings, so the fix is a copy away. A fraction is accepted when it
 * comes to whole bytes ({@code 1.5GiB}, not {@code 0.3KiB}); whether the size is a whole number of blocks is the
 * namespace's check.
 */
public final class ByteSize {
    private static final Pattern SIZE = Pattern.compile("([0-9]+(?:\\.[0-9]+)?)\\s*([a-zA-Z]*)");
    private static final String FORMS = "give a number of bytes (4096) or a number with a binary unit: K, M, G, T, P"
            + " or KiB, MiB, GiB, TiB, PiB (powers of 1024; 64MiB, 1.5GiB)";
    private static final String UNITS = "KMGTP";

    private ByteSize() {
    }

    /** The bytes {@code text} names; an {@link IllegalArgumentException} saying what to write instead otherwise. */
    public static long parse(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("size is missing: " + FORMS);
        }
        String t = text.trim();
        Matcher m = SIZE.matcher(t);
        if (!m.matches()) {
            throw new IllegalArgumentException("size '" + text + "' is not a number with an optional unit: " + FORMS);
        }
        BigDecimal number = new BigDecimal(m.group(1));
        String unit = m.group(2);
        int power = power(text, number, unit);
        BigDecimal bytes = number.multiply(new BigDecimal(BigInteger.valueOf(1024).pow(power)));
        BigInteger whole;
        try {
            whole = bytes.toBigIntegerExact();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("size '" + text + "' is " + bytes.stripTrailingZeros().toPlainString()
                    + " bytes, not a whole number of bytes");
        }
        if (whole.bitLength() > 63) {
            throw new IllegalArgumentException("size '" + text + "' is too large (at most " + Long.MAX_VALUE
                    + " bytes)");
        }
        return whole.longValueExact();
    }

    /** The power of 1024 {@code unit} stands for. */
    private static int power(String text, BigDecimal number, String unit) {
        if (unit.isEmpty() || unit.equalsIgnoreCase("b")) {
            return 0;
        }
        String u = unit.toUpperCase(Locale.ROOT);
        int power = UNITS.indexOf(u.charAt(0)) + 1;
        if (power == 0) {
            throw new IllegalArgumentException("size '" + text + "': unknown unit '" + unit + "'; " + FORMS);
        }
        String rest = u.substring(1);
        if (rest.isEmpty() || rest.equals("I") || rest.equals("IB")) {
            return power;
        }
        if (rest.equals("B")) {
            BigDecimal decimal = number.multiply(BigDecimal.TEN.pow(3 * power));
            BigDecimal binary = number.multiply(new BigDecimal(BigInteger.valueOf(1024).pow(power)));
            String iec = UNITS.charAt(power - 1) + "iB";
            throw new IllegalArgumentException("size '" + text + "' is ambiguous: " + unit + " is a power of 1000 to"
                    + " some tools and of 1024 to others; write " + number.toPlainString() + iec + " ("
                    + grouped(binary) + " bytes) or " + decimal.stripTrailingZeros().toPlainString() + " ("
                    + grouped(decimal) + " bytes)");
        }
        throw new IllegalArgumentException("size '" + text + "': unknown unit '" + unit + "'; " + FORMS);
    }

    private static String grouped(BigDecimal bytes) {
        return NumberFormat.getIntegerInstance(Locale.ROOT).format(bytes.toBigInteger());
    }
}
