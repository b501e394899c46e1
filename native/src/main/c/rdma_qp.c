/*
 * rdma_qp.c: shared receive queues and RC queue pairs (created on an RDMA CM id), their state and teardown.
 */
#include <string.h>

#include "nvmeof_rdma.h"

/* ------------------------------------------------------------------------------------------------------------ */
/* Shared receive queues and queue pairs                                                                         */

/* out[0] = srq pointer, out[1] = actual max_wr. */
NVR_EXPORT int nvr_create_srq(void *pd, int max_wr, uint64_t *out) {
    struct ibv_srq_init_attr a;
    memset(&a, 0, sizeof(a));
    a.attr.max_wr = (uint32_t)max_wr;
    a.attr.max_sge = 1;
    struct ibv_srq *srq = ibv_create_srq((struct ibv_pd *)pd, &a);
    if (!srq) return neg_errno();
    out[0] = (uint64_t)(uintptr_t)srq;
    out[1] = a.attr.max_wr;
    return 0;
}

NVR_EXPORT int nvr_destroy_srq(void *srq) { return neg_rc(ibv_destroy_srq((struct ibv_srq *)srq)); }

/* Creates an RC queue pair on a CM id (rdma_create_qp: the QP is then moved through INIT/RTR/RTS by RDMA CM itself).
 * One SGE per work request (the descriptors carry one). srq may be NULL. sq_sig_all 0: only descriptors flagged
 * SIGNALED complete, so a chain of RDMA WRITEs before a SEND can cost one completion.
 * out[5] (u64): qp pointer, qp_num, actual max_send_wr, actual max_recv_wr, actual max_inline_data. */
NVR_EXPORT int nvr_create_qp(void *id, void *pd, void *send_cq, void *recv_cq, void *srq, int max_send_wr,
                             int max_recv_wr, int max_inline_data, uint64_t *out) {
    struct ibv_qp_init_attr a;
    memset(&a, 0, sizeof(a));
    a.send_cq = (struct ibv_cq *)send_cq;
    a.recv_cq = (struct ibv_cq *)recv_cq;
    a.srq = (struct ibv_srq *)srq;
    a.qp_type = IBV_QPT_RC;
    a.sq_sig_all = 0;
    a.cap.max_send_wr = (uint32_t)max_send_wr;
    a.cap.max_recv_wr = srq ? 0 : (uint32_t)max_recv_wr;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = (uint32_t)max_inline_data;
    struct rdma_cm_id *cm = (struct rdma_cm_id *)id;
    if (rdma_create_qp(cm, (struct ibv_pd *)pd, &a)) return neg_errno();
    out[0] = (uint64_t)(uintptr_t)cm->qp;
    out[1] = cm->qp->qp_num;
    out[2] = a.cap.max_send_wr;
    out[3] = a.cap.max_recv_wr;
    out[4] = a.cap.max_inline_data;
    return 0;
}

/* The QP's current state (enum ibv_qp_state: RESET 0, INIT 1, RTR 2, RTS 3, SQD 4, SQE 5, ERR 6) or -errno. */
NVR_EXPORT int nvr_qp_state(void *qp) {
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;
    int rc = ibv_query_qp((struct ibv_qp *)qp, &attr, IBV_QP_STATE, &init);
    if (rc) return neg_rc(rc);
    return (int)attr.qp_state;
}

/* Moves a QP to ERR: outstanding work requests complete with IBV_WC_WR_FLUSH_ERR, the usual first step of an
 * orderly teardown (drain, then destroy). */
NVR_EXPORT int nvr_qp_to_error(void *qp) {
    struct ibv_qp_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_ERR;
    return neg_rc(ibv_modify_qp((struct ibv_qp *)qp, &attr, IBV_QP_STATE));
}
