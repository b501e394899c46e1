package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Addresses as the CLI's --path and the loader's locations write them, read by one parser. */
class TransportIdTest {
    @Test
    void addressesWithAndWithoutPortsAndBrackets() {
        assertEquals(new TransportId.Address("10.0.0.5", 4421), TransportId.parseAddress("10.0.0.5:4421", 4420));
        assertEquals(new TransportId.Address("host.example", 4420), TransportId.parseAddress(" host.example ", 4420));
        assertEquals(new TransportId.Address("fe80::1", 4421), TransportId.parseAddress("[fe80::1]:4421", 4420));
        assertEquals(new TransportId.Address("fe80::1", 8009), TransportId.parseAddress("[fe80::1]", 8009));
        assertEquals("[fe80::1]:4421", TransportId.parseAddress("[fe80::1]:4421", 4420).toString());
    }

    @Test
    void eachMalformedAddressSaysWhatIsWrong() {
        String[][] cases = {
            {"[fe80::1", "unclosed '['"}, {"[fe80::1]4420", "expected ':PORT'"},
            {"fe80::1", "IPv6 address in brackets"}, {":4420", "no address"}, {"", "no address"},
            {"10.0.0.5:x", "port 'x' is not a number"}, {"10.0.0.5:0", "1 to 65535, got 0"},
            {"10.0.0.5:65536", "1 to 65535, got 65536"}, {"10.0.0.5:", "port '' is not a number"},
        };
        for (String[] c : cases) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> TransportId.parseAddress(c[0], 4420), c[0]);
            assertEquals(true, e.getMessage().contains(c[1]), c[0] + ": " + e.getMessage());
        }
    }
}
