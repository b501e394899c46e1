package io.nvmeof.initiator;

/**
 * Counters of one queue, on either transport. Read while I/O runs they are a consistent-enough snapshot for monitoring,
 * not an exact cut: each counter is written by the queue's I/O thread and read without a lock.
 *
 * @param label             the queue, as messages name it ("queue 1 of 10.0.0.1:4420")
 * @param slots             commands the queue can have outstanding at once (its depth minus the entry NVMe keeps empty)
 * @param inFlight          commands holding a slot now (sent, or handed to the I/O thread and about to be)
 * @param waiting           requests waiting for a free slot in the overflow queue
 * @param commands          commands completed by the controller (any status)
 * @param errors            of those, completed with a non-zero NVMe status
 * @param readBytes         data bytes read (controller to host) by commands completed successfully
 * @param writtenBytes      data bytes written (host to controller) by commands completed successfully
 * @param timeouts          commands that timed out (each one tears its queue down: see {@link IoCallback#ERR_TIMEOUT})
 * @param queueFull         submissions refused with {@link IoCallback#ERR_QUEUE_FULL}
 * @param callbackFailures  completion callbacks that threw
 * @param meanLatencyNanos  mean time from sending a command to its completion, over {@code commands}
 * @param maxLatencyNanos   the longest such time seen
 */
public record QueueStatistics(String label, int slots, int inFlight, int waiting, long commands, long errors,
                              long readBytes, long writtenBytes, long timeouts, long queueFull, long callbackFailures,
                              long meanLatencyNanos, long maxLatencyNanos) {
}
