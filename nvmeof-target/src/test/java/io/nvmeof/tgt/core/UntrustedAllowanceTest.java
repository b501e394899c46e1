package io.nvmeof.tgt.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 51, findings 1 and 2, in the parts that decide them: the memory allowance of queues whose host proved nothing
 * yet ({@link MemoryBudget}) and the turn order of authentication steps ({@link AuthenticationWork}).
 */
@Timeout(60)
class UntrustedAllowanceTest {
    private static final long KIB = 1024;

    @Test
    void untrustedQueuesReserveWithinTheirSourcesAndTheTotalAllowanceAndLeaveTheRestToOthers() throws Exception {
        MemoryBudget m = new MemoryBudget(1024 * KIB, 64 * KIB, 400 * KIB, 200 * KIB);
        Object a = SourceAddress.of(InetAddress.getByName("192.0.2.1"));
        Object b = SourceAddress.of(InetAddress.getByName("192.0.2.2"));
        Object c = SourceAddress.of(InetAddress.getByName("192.0.2.3"));
        assertNull(m.reserveUntrusted(100 * KIB, a));
        assertNull(m.reserveUntrusted(100 * KIB, a));
        String why = m.reserveUntrusted(100 * KIB, a);
        assertNotNull(why, "a source's allowance is 200 KiB");
        assertTrue(why.contains("192.0.2.1"), why);
        assertEquals(200 * KIB, m.untrustedUsedBy(a));
        assertNull(m.reserveUntrusted(100 * KIB, b), "another source still gets in");
        assertNull(m.reserveUntrusted(100 * KIB, b));
        assertNotNull(m.reserveUntrusted(100 * KIB, c), "the total allowance (400 KiB) is taken");
        assertEquals(2, m.refusedUntrusted());
        assertTrue(m.reserveQueue(500 * KIB), "a queue of a host that proved itself takes the rest");
        assertEquals(900 * KIB, m.used());

        m.releaseUntrusted(100 * KIB, a);
        assertEquals(100 * KIB, m.untrustedUsedBy(a));
        assertNull(m.reserveUntrusted(100 * KIB, c), "what a source gives back is anyone's again");
        // One of b's queues authenticates: it leaves the allowance and takes what its real buffers need.
        assertFalse(m.promote(100 * KIB, b, 200 * KIB), "1,024 - 64 KiB headroom: 200 KiB more do not fit");
        assertEquals(200 * KIB, m.untrustedUsedBy(b), "nothing changed");
        assertTrue(m.promote(100 * KIB, b, 50 * KIB));
        assertEquals(100 * KIB, m.untrustedUsedBy(b));
        assertEquals(300 * KIB, m.untrustedUsed());
        assertEquals(950 * KIB, m.used());
        m.release(150 * KIB);
        m.releaseUntrusted(100 * KIB, a);
        m.releaseUntrusted(100 * KIB, b);
        m.releaseUntrusted(100 * KIB, c);
        m.release(500 * KIB);
        assertEquals(0, m.used());
        assertEquals(0, m.untrustedUsed());
        assertEquals(0, m.untrustedUsedBy(a) + m.untrustedUsedBy(b) + m.untrustedUsedBy(c));
    }

    /**
     * Review of issue 51: data of a queue whose host proved nothing counts against the untrusted allowance, and such a
     * queue waits for it on a list of its own: memory a trusted queue gives back wakes trusted waiters, not it (it
     * would not fit, and the trusted waiter behind it would miss the wake-up).
     */
    @Test
    void untrustedDataWaitsOnItsOwnListAndTakesNoWakeUpOfTrustedQueues() throws Exception {
        MemoryBudget m = new MemoryBudget(1024 * KIB, 64 * KIB, 200 * KIB, 100 * KIB);
        Object a = SourceAddress.of(InetAddress.getByName("192.0.2.1"));
        assertEquals(MemoryBudget.CHARGED, m.chargeUntrusted(100 * KIB, a));
        assertEquals(MemoryBudget.UNTRUSTED_FULL, m.chargeUntrusted(1, a), "the address's share is taken");
        AtomicInteger untrustedWoken = new AtomicInteger();
        AtomicInteger trustedWoken = new AtomicInteger();
        m.awaitUntrustedMemory(untrustedWoken::incrementAndGet);
        m.awaitMemory(trustedWoken::incrementAndGet);
        assertTrue(m.chargeData(300 * KIB));
        m.release(300 * KIB);
        assertEquals(1, trustedWoken.get(), "a trusted queue's memory wakes a trusted waiter");
        assertEquals(0, untrustedWoken.get(), "and not the untrusted one");
        m.releaseUntrusted(100 * KIB, a);
        assertEquals(1, untrustedWoken.get(), "untrusted memory given back wakes it");
        assertEquals(0, m.untrustedUsed());
        assertEquals(0, m.used());
        assertEquals(MemoryBudget.FULL, new MemoryBudget(256 * KIB, 64 * KIB, 512 * KIB, 512 * KIB)
                .chargeUntrusted(300 * KIB, a), "beyond the whole limit it waits on the target's list");
    }

    @Test
    void anIpv6SourceCountsByItsSlash64AndAnUnknownOneOnlyAgainstTheTotal() throws Exception {
        Object one = SourceAddress.of(InetAddress.getByName("2001:db8:1:2::1"));
        Object other = SourceAddress.of(InetAddress.getByName("2001:db8:1:2:ffff::7"));
        assertEquals(one, other, "one /64: " + one);
        assertEquals("2001:0db8:0001:0002::/64", one);
        assertFalse(one.equals(SourceAddress.of(InetAddress.getByName("2001:db8:1:3::1"))));
        MemoryBudget m = new MemoryBudget(1024 * KIB, 64 * KIB, 300 * KIB, 100 * KIB);
        for (int i = 0; i < 3; i++) {
            assertNull(m.reserveUntrusted(100 * KIB, SourceAddress.UNKNOWN), "no per-source count where unknown");
        }
        assertNotNull(m.reserveUntrusted(100 * KIB, SourceAddress.UNKNOWN), "but the total still holds");
    }

    /**
     * One source's steps compute one at a time and wait their turn; another source's step runs while the first
     * source's are still waiting (before, one FIFO queue served the flood first), and a source with
     * {@link AuthenticationWork#PER_SOURCE_WAITING} steps waiting gets no more in while others still do.
     */
    @Test
    void sourcesTakeTurnsAndOneSourceComputesOneStepAtATime() throws Exception {
        AuthenticationWork work = new AuthenticationWork(2);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger floodRunning = new AtomicInteger();
        AtomicInteger floodMostAtOnce = new AtomicInteger();
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        Object flood = SourceAddress.of(InetAddress.getByName("192.0.2.66"));
        Object host = SourceAddress.of(InetAddress.getByName("192.0.2.10"));
        for (int i = 0; i < AuthenticationWork.PER_SOURCE_WAITING + 1; i++) {
            int n = i;
            assertTrue(work.submit(flood, () -> {
                int now = floodRunning.incrementAndGet();
                floodMostAtOnce.accumulateAndGet(now, Math::max);
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                order.add("flood " + n);
                floodRunning.decrementAndGet();
            }), "step " + i);
        }
        assertFalse(work.submit(flood, () -> order.add("never")), "its " + AuthenticationWork.PER_SOURCE_WAITING
                + " waiting steps are all it may have waiting");
        CountDownLatch hostDone = new CountDownLatch(1);
        assertTrue(work.submit(host, () -> {
            order.add("host");
            hostDone.countDown();
        }));
        assertTrue(hostDone.await(10, TimeUnit.SECONDS), "the host's step runs while the flood's first still computes");
        assertEquals(List.of("host"), List.copyOf(order));
        release.countDown();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (order.size() < AuthenticationWork.PER_SOURCE_WAITING + 2 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(AuthenticationWork.PER_SOURCE_WAITING + 2, order.size(), order.toString());
        assertEquals(1, floodMostAtOnce.get(), "one step of a source computes at a time");
        assertEquals(0, work.waiting());
        work.shutdownNow();
        assertFalse(work.submit(host, () -> { }), "nothing is taken once stopped");
    }
}
