package io.nvmeof.conformance.interop;

/**
 * The check runner of the guest interop programs: each check prints {@code PASS name} or {@code FAIL name: why} (the
 * job scripts copy those lines into their summaries), and {@link #exit} ends the program non-zero when any failed.
 */
abstract class InteropChecks {
    private int passed;
    private int failed;

    interface Check {
        void run() throws Exception;
    }

    void check(String name, Check c) {
        try {
            c.run();
            passed++;
            System.out.println("PASS " + name);
        } catch (Throwable t) {
            failed++;
            System.out.println("FAIL " + name + ": " + t);
            t.printStackTrace(System.out); // the job's .out keeps the trace; summaries take only the FAIL line
        }
        System.out.flush();
    }

    static void require(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    /** Prints the totals and exits: 0 when every check passed. */
    void exit() {
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
