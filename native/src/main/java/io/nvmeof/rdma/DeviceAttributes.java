package io.nvmeof.rdma;

/**
 * The device limits a transport sizes itself by (from ibv_query_device). {@code maxQpRdAtom} bounds the RDMA READs a
 * QP may have in flight as responder (what we can offer as responder_resources), {@code maxQpInitRdAtom} as
 * initiator (initiator_depth).
 */
public record DeviceAttributes(int maxQpWr, int maxSge, long maxMrSize, int maxQpRdAtom, int maxQpInitRdAtom,
                               int maxCqe, int maxQp, int maxMr, int maxSrq, int maxSrqWr, int maxCq,
                               int physPortCount, int vendorId, int vendorPartId, long pageSizeCap, int atomicCap) {
    static DeviceAttributes of(long[] v) {
        return new DeviceAttributes((int) v[0], (int) v[1], v[2], (int) v[3], (int) v[4], (int) v[5], (int) v[6],
                (int) v[7], (int) v[8], (int) v[9], (int) v[10], (int) v[11], (int) v[12], (int) v[13], v[14],
                (int) v[15]);
    }
}
