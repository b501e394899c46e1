/*
 * rdma_post.c: the data path's posting: one native call turns a batch of Java-written descriptors into a linked
 * chain of work requests on the stack and posts it with one ibv_post_send / ibv_post_recv / ibv_post_srq_recv. The
 * test hooks decode descriptors through the very chain builders that post, so the host tests check that code.
 */
#include <string.h>

#include "nvmeof_rdma.h"

/* ------------------------------------------------------------------------------------------------------------ */
/* Data path                                                                                                     */

/* Builds the linked ibv_send_wr chain from n descriptors into wrs/sges. Shared by nvr_post_send and the decode
 * test hook, so the host tests check the very code that posts. Returns 0 or -EINVAL for an unknown opcode. */
static int build_send_chain(const struct nvr_send_desc *d, int n, struct ibv_send_wr *wrs, struct ibv_sge *sges,
                            int *bad) {
    for (int i = 0; i < n; i++) {
        struct ibv_send_wr *wr = &wrs[i];
        memset(wr, 0, sizeof(*wr));
        wr->wr_id = d[i].wr_id;
        wr->next = (i + 1 < n) ? &wrs[i + 1] : NULL;
        if (d[i].length != 0) {
            sges[i].addr = d[i].local_addr;
            sges[i].length = d[i].length;
            sges[i].lkey = d[i].lkey;
            wr->sg_list = &sges[i];
            wr->num_sge = 1;
        }
        switch (d[i].opcode) {
        case NVR_OP_SEND: wr->opcode = IBV_WR_SEND; break;
        case NVR_OP_SEND_WITH_INV:
            wr->opcode = IBV_WR_SEND_WITH_INV;
            wr->invalidate_rkey = d[i].invalidate_rkey;
            break;
        case NVR_OP_RDMA_WRITE:
            wr->opcode = IBV_WR_RDMA_WRITE;
            wr->wr.rdma.remote_addr = d[i].remote_addr;
            wr->wr.rdma.rkey = d[i].rkey;
            break;
        case NVR_OP_RDMA_READ:
            wr->opcode = IBV_WR_RDMA_READ;
            wr->wr.rdma.remote_addr = d[i].remote_addr;
            wr->wr.rdma.rkey = d[i].rkey;
            break;
        default:
            if (bad) *bad = i;
            return -EINVAL;
        }
        unsigned int f = 0;
        if (d[i].flags & NVR_F_SIGNALED) f |= IBV_SEND_SIGNALED;
        if (d[i].flags & NVR_F_FENCE) f |= IBV_SEND_FENCE;
        if (d[i].flags & NVR_F_INLINE) f |= IBV_SEND_INLINE;
        if (d[i].flags & NVR_F_SOLICITED) f |= IBV_SEND_SOLICITED;
        wr->send_flags = f;
    }
    return 0;
}

/* Posts n (1..64) send-queue work requests with ONE ibv_post_send. On failure *bad is the index of the first
 * descriptor not posted (those before it were posted) and the return value is -errno. */
NVR_EXPORT int nvr_post_send(void *qp, void *descs, int n, int *bad) {
    if (bad) *bad = -1;
    if (n == 0) return 0;
    if (n < 0 || n > NVR_MAX_BATCH || qp == NULL || descs == NULL) {
        if (bad) *bad = 0;
        return -EINVAL;
    }
    struct ibv_send_wr wrs[NVR_MAX_BATCH];
    struct ibv_sge sges[NVR_MAX_BATCH];
    int rc = build_send_chain((const struct nvr_send_desc *)descs, n, wrs, sges, bad);
    if (rc) return rc;
    struct ibv_send_wr *bad_wr = NULL;
    rc = ibv_post_send((struct ibv_qp *)qp, wrs, &bad_wr);
    if (rc) {
        if (bad) *bad = bad_wr ? (int)(bad_wr - wrs) : 0;
        return neg_rc(rc);
    }
    return 0;
}

static void build_recv_chain(const struct nvr_recv_desc *d, int n, struct ibv_recv_wr *wrs, struct ibv_sge *sges) {
    for (int i = 0; i < n; i++) {
        sges[i].addr = d[i].addr;
        sges[i].length = d[i].length;
        sges[i].lkey = d[i].lkey;
        wrs[i].wr_id = d[i].wr_id;
        wrs[i].next = (i + 1 < n) ? &wrs[i + 1] : NULL;
        wrs[i].sg_list = &sges[i];
        wrs[i].num_sge = 1;
    }
}

/* Posts n (1..64) receive buffers to a QP's receive queue with one ibv_post_recv. */
NVR_EXPORT int nvr_post_recv(void *qp, void *descs, int n, int *bad) {
    if (bad) *bad = -1;
    if (n == 0) return 0;
    if (n < 0 || n > NVR_MAX_BATCH || qp == NULL || descs == NULL) {
        if (bad) *bad = 0;
        return -EINVAL;
    }
    struct ibv_recv_wr wrs[NVR_MAX_BATCH];
    struct ibv_sge sges[NVR_MAX_BATCH];
    build_recv_chain((const struct nvr_recv_desc *)descs, n, wrs, sges);
    struct ibv_recv_wr *bad_wr = NULL;
    int rc = ibv_post_recv((struct ibv_qp *)qp, wrs, &bad_wr);
    if (rc) {
        if (bad) *bad = bad_wr ? (int)(bad_wr - wrs) : 0;
        return neg_rc(rc);
    }
    return 0;
}

/* The same for a shared receive queue. */
NVR_EXPORT int nvr_post_srq_recv(void *srq, void *descs, int n, int *bad) {
    if (bad) *bad = -1;
    if (n == 0) return 0;
    if (n < 0 || n > NVR_MAX_BATCH || srq == NULL || descs == NULL) {
        if (bad) *bad = 0;
        return -EINVAL;
    }
    struct ibv_recv_wr wrs[NVR_MAX_BATCH];
    struct ibv_sge sges[NVR_MAX_BATCH];
    build_recv_chain((const struct nvr_recv_desc *)descs, n, wrs, sges);
    struct ibv_recv_wr *bad_wr = NULL;
    int rc = ibv_post_srq_recv((struct ibv_srq *)srq, wrs, &bad_wr);
    if (rc) {
        if (bad) *bad = bad_wr ? (int)(bad_wr - wrs) : 0;
        return neg_rc(rc);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Test hooks: the same encoders, without a device. The host tests check Java's records against them.           */

/* Decodes n send descriptors with build_send_chain and writes, per work request, 12 u64s:
 * wr_id, ibv opcode, send_flags, num_sge, sge addr, sge length, sge lkey, remote_addr, rkey, invalidate_rkey,
 * index of the next wr in the chain (-1 at the end), 0. */
NVR_EXPORT int nvr_debug_decode_send(void *descs, int n, uint64_t *out) {
    if (n < 0 || n > NVR_MAX_BATCH) return -EINVAL;
    struct ibv_send_wr wrs[NVR_MAX_BATCH];
    struct ibv_sge sges[NVR_MAX_BATCH];
    int bad = -1;
    int rc = build_send_chain((const struct nvr_send_desc *)descs, n, wrs, sges, &bad);
    if (rc) return rc;
    for (int i = 0; i < n; i++) {
        uint64_t *r = out + 12 * i;
        r[0] = wrs[i].wr_id;
        r[1] = (uint64_t)wrs[i].opcode;
        r[2] = wrs[i].send_flags;
        r[3] = (uint64_t)wrs[i].num_sge;
        r[4] = wrs[i].num_sge ? wrs[i].sg_list->addr : 0;
        r[5] = wrs[i].num_sge ? wrs[i].sg_list->length : 0;
        r[6] = wrs[i].num_sge ? wrs[i].sg_list->lkey : 0;
        r[7] = wrs[i].wr.rdma.remote_addr;
        r[8] = wrs[i].wr.rdma.rkey;
        r[9] = wrs[i].opcode == IBV_WR_SEND_WITH_INV ? wrs[i].invalidate_rkey : 0;
        r[10] = wrs[i].next ? (uint64_t)(wrs[i].next - wrs) : (uint64_t)-1;
        r[11] = 0;
    }
    return 0;
}

/* Decodes n receive descriptors: per wr 5 u64s: wr_id, sge addr, sge length, sge lkey, next index (-1 at end). */
NVR_EXPORT int nvr_debug_decode_recv(void *descs, int n, uint64_t *out) {
    if (n < 0 || n > NVR_MAX_BATCH) return -EINVAL;
    struct ibv_recv_wr wrs[NVR_MAX_BATCH];
    struct ibv_sge sges[NVR_MAX_BATCH];
    build_recv_chain((const struct nvr_recv_desc *)descs, n, wrs, sges);
    for (int i = 0; i < n; i++) {
        uint64_t *r = out + 5 * i;
        r[0] = wrs[i].wr_id;
        r[1] = wrs[i].sg_list->addr;
        r[2] = wrs[i].sg_list->length;
        r[3] = wrs[i].sg_list->lkey;
        r[4] = wrs[i].next ? (uint64_t)(wrs[i].next - wrs) : (uint64_t)-1;
    }
    return 0;
}
