/*
 * rdma_poll.c: the data path's completions: polling a CQ into compact records with one native call, arming it,
 * and the test hook that writes synthetic completions through the same encoder.
 */
#include <string.h>

#include "nvmeof_rdma.h"

/* ------------------------------------------------------------------------------------------------------------ */
/* Data path                                                                                                     */

static void encode_wc(const struct ibv_wc *wc, struct nvr_wc *o) {
    o->wr_id = wc->wr_id;
    o->status = (uint32_t)wc->status;
    o->opcode = (uint32_t)wc->opcode;
    o->byte_len = wc->byte_len;
    o->wc_flags = (uint32_t)wc->wc_flags;
    /* imm_data and invalidated_rkey share a union in struct ibv_wc; wc_flags says which one it is. */
    o->imm_or_invalidated_rkey = wc->invalidated_rkey;
    o->qp_num = wc->qp_num;
}

/* Polls up to max completions into out (max * 32 bytes) with as few ibv_poll_cq calls as the CQ needs: one native
 * call from Java however many completions come back. Returns the count (0 = CQ empty) or -errno. */
NVR_EXPORT int nvr_poll_cq(void *cq, int max, void *out) {
    if (cq == NULL || out == NULL || max < 0) return -EINVAL;
    struct ibv_wc wc[32];
    struct nvr_wc *o = (struct nvr_wc *)out;
    int total = 0;
    while (total < max) {
        int want = max - total < 32 ? max - total : 32;
        int got = ibv_poll_cq((struct ibv_cq *)cq, want, wc);
        if (got < 0) return total > 0 ? total : -EIO; /* ibv_poll_cq gives no errno; the CQ is unusable */
        for (int i = 0; i < got; i++) encode_wc(&wc[i], &o[total + i]);
        total += got;
        if (got < want) break; /* drained */
    }
    return total;
}

/* Arms the CQ so that the next completion (or the next solicited one) raises an event on its completion channel. */
NVR_EXPORT int nvr_req_notify_cq(void *cq, int solicited_only) {
    if (cq == NULL) return -EINVAL;
    return neg_rc(ibv_req_notify_cq((struct ibv_cq *)cq, solicited_only));
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Test hooks: the same encoders, without a device. The host tests check Java's records against them.           */

/* Writes n synthetic completions through encode_wc: entry i has wr_id = base + i, status = i % 3 (0 success,
 * 1 LOC_LEN_ERR, 2 LOC_QP_OP_ERR), opcode RECV for odd i (with IBV_WC_WITH_INV and invalidated_rkey 0xABC00000 + i)
 * and RDMA_WRITE for even i, byte_len 4096 * i, qp_num 0x100 + i. */
NVR_EXPORT int nvr_debug_fill_wc(void *out, int n, uint64_t base) {
    struct nvr_wc *o = (struct nvr_wc *)out;
    for (int i = 0; i < n; i++) {
        struct ibv_wc wc;
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = base + (uint64_t)i;
        wc.status = (enum ibv_wc_status)(i % 3);
        wc.opcode = (i & 1) ? IBV_WC_RECV : IBV_WC_RDMA_WRITE;
        wc.byte_len = 4096u * (uint32_t)i;
        if (i & 1) {
            wc.wc_flags = IBV_WC_WITH_INV;
            wc.invalidated_rkey = 0xABC00000u + (uint32_t)i;
        }
        wc.qp_num = 0x100u + (uint32_t)i;
        encode_wc(&wc, &o[i]);
    }
    return n;
}
