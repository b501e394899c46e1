package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Flyweight;

/**
 * SMART / Health Information log (LID 02h), 512 bytes. The 128-bit counters are written as their low 64 bits with
 * the high 64 bits zero, which covers every count this target can reach.
 */
public final class SmartHealthLog extends Flyweight {
    public static final int LENGTH = 512;
    public static final int CRITICAL_WARNING = 0;
    public static final int COMPOSITE_TEMPERATURE = 1;
    public static final int AVAILABLE_SPARE = 3;
    public static final int AVAILABLE_SPARE_THRESHOLD = 4;
    public static final int PERCENTAGE_USED = 5;
    public static final int DATA_UNITS_READ = 32;
    public static final int DATA_UNITS_WRITTEN = 48;
    public static final int HOST_READ_COMMANDS = 64;
    public static final int HOST_WRITE_COMMANDS = 80;
    public static final int CONTROLLER_BUSY_TIME = 96;
    public static final int POWER_CYCLES = 112;
    public static final int POWER_ON_HOURS = 128;
    public static final int UNSAFE_SHUTDOWNS = 144;
    public static final int MEDIA_ERRORS = 160;
    public static final int ERROR_LOG_ENTRIES = 176;

    @Override
    public int length() { return LENGTH; }

    public int criticalWarning() { return u8(CRITICAL_WARNING); }
    public SmartHealthLog criticalWarning(int v) { u8(CRITICAL_WARNING, v); return this; }
    /** Kelvin. */
    public int compositeTemperature() { return u16(COMPOSITE_TEMPERATURE); }
    public SmartHealthLog compositeTemperature(int v) { u16(COMPOSITE_TEMPERATURE, v); return this; }
    public int availableSpare() { return u8(AVAILABLE_SPARE); }
    public SmartHealthLog availableSpare(int v) { u8(AVAILABLE_SPARE, v); return this; }
    public int availableSpareThreshold() { return u8(AVAILABLE_SPARE_THRESHOLD); }
    public SmartHealthLog availableSpareThreshold(int v) { u8(AVAILABLE_SPARE_THRESHOLD, v); return this; }
    public int percentageUsed() { return u8(PERCENTAGE_USED); }

    /** Data units are thousands of 512-byte units, rounded up. */
    public long dataUnitsRead() { return u64(DATA_UNITS_READ); }
    public SmartHealthLog dataUnitsRead(long v) { counter(DATA_UNITS_READ, v); return this; }
    public long dataUnitsWritten() { return u64(DATA_UNITS_WRITTEN); }
    public SmartHealthLog dataUnitsWritten(long v) { counter(DATA_UNITS_WRITTEN, v); return this; }
    public long hostReadCommands() { return u64(HOST_READ_COMMANDS); }
    public SmartHealthLog hostReadCommands(long v) { counter(HOST_READ_COMMANDS, v); return this; }
    public long hostWriteCommands() { return u64(HOST_WRITE_COMMANDS); }
    public SmartHealthLog hostWriteCommands(long v) { counter(HOST_WRITE_COMMANDS, v); return this; }
    public long powerOnHours() { return u64(POWER_ON_HOURS); }
    public SmartHealthLog powerOnHours(long v) { counter(POWER_ON_HOURS, v); return this; }
    public long errorLogEntries() { return u64(ERROR_LOG_ENTRIES); }
    public SmartHealthLog errorLogEntries(long v) { counter(ERROR_LOG_ENTRIES, v); return this; }

    private void counter(int at, long v) {
        u64(at, v);
        u64(at + 8, 0);
    }

    /** Converts bytes to SMART data units: 1000 units of 512 bytes, rounded up. */
    public static long dataUnits(long bytes) {
        long sectors = (bytes + 511) / 512;
        return (sectors + 999) / 1000;
    }
}
