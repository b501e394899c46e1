package io.nvmeof.netty;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;

/**
 * The buffer allocator of every NVMe/TCP channel, on both sides.
 *
 * <p>Netty's pooled allocator, not its 4.2 default (the adaptive one): the adaptive allocator's buffers hand out a
 * new {@code ByteBuffer} slice for each {@code internalNioBuffer} call, and Netty makes that call for every buffer it
 * writes to a socket, as the backends do for every read and write. That was 200-400 bytes of garbage per 4 KiB I/O
 * on each side (a JFR allocation profile of the target under reads showed nothing else; young collections every few
 * seconds). A pooled buffer keeps one view for its life and is itself recycled, so a steady stream of I/O allocates
 * nothing ({@code SteadyStateAllocationTest}).
 */
public final class Allocators {
    private Allocators() {
    }

    /** The allocator NVMe/TCP channels use (set as {@code ChannelOption.ALLOCATOR}). */
    public static ByteBufAllocator dataPath() {
        return PooledByteBufAllocator.DEFAULT;
    }
}
