package io.nvmeof.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * The bit fields of Identify Controller decoded for people, as {@code nvme id-ctrl -H} prints them: one line per field,
 * its bits, its value and what that value means (NVMe Base Specification 2.1, Figure 312).
 */
final class IdentifyFields {
    private IdentifyFields() {
    }

    /** Optional NVM Command Support (ONCS), bits 0-8. */
    static List<String> oncs(int v) {
        String[] names = {"Compare", "Write Uncorrectable", "Data Set Management", "Write Zeroes",
            "Save and Select in Set/Get Features", "Reservations", "Timestamp", "Verify", "Copy"};
        List<String> out = new ArrayList<>();
        for (int bit = names.length - 1; bit >= 0; bit--) {
            boolean on = (v >>> bit & 1) != 0;
            out.add(String.format("  [%d:%d] : %d\t%s %s", bit, bit, on ? 1 : 0, names[bit], on ? "Supported" : "Not Supported"));
        }
        return out;
    }

    /** SGL Support (SGLS). */
    static List<String> sgls(long v) {
        List<String> out = new ArrayList<>();
        int[] bits = {21, 20, 19, 18, 17, 16, 2};
        String[] names = {"Transport SGL Data Block Descriptor", "Offset in an SGL Data Block's Address",
            "MPTR Holding an SGL Descriptor", "SGL Length Larger than the Data", "Byte-Aligned Contiguous Metadata Buffer",
            "SGL Bit Bucket Descriptor", "Keyed SGL Data Block Descriptor"};
        for (int i = 0; i < bits.length; i++) {
            boolean on = (v >>> bits[i] & 1) != 0;
            out.add(String.format("  [%d:%d] : %d\t%s %s", bits[i], bits[i], on ? 1 : 0, names[i],
                    on ? "Supported" : "Not Supported"));
        }
        int sup = (int) (v & 3);
        String what = switch (sup) {
            case 0 -> "SGLs Not Supported";
            case 1 -> "SGLs Supported, No Alignment Required";
            case 2 -> "SGLs Supported, Dword Alignment Required";
            default -> "Reserved";
        };
        out.add(String.format("  [1:0] : %#x\t%s", sup, what));
        return out;
    }

    /** Keep Alive Support (KAS): the granularity, in units of 100 ms. */
    static List<String> kas(int v) {
        return List.of(v == 0 ? "  Keep Alive Not Supported"
                : String.format("  Keep Alive Supported, granularity %d ms", v * 100));
    }

    /** Controller Type (CNTRLTYPE). */
    static List<String> controllerType(int v) {
        String what = switch (v) {
            case 0 -> "not reported";
            case 1 -> "I/O Controller";
            case 2 -> "Discovery Controller";
            case 3 -> "Administrative Controller";
            default -> "Reserved";
        };
        return List.of("  " + what);
    }
}
