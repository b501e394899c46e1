/*
 * nvmeof_rdma.c: the small C helper under io.nvmeof.rdma (libnvmeofrdma.so, loaded by JNA), and its housekeeping.
 *
 * WHY this exists:
 *  - ibv_post_send, ibv_post_recv, ibv_post_srq_recv, ibv_poll_cq, ibv_req_notify_cq and ibv_query_port are inline
 *    functions (or macros) in <infiniband/verbs.h>: they jump through the provider's ops table, so there is no
 *    exported symbol JNA could bind. ibv_reg_mr is a macro over ibv_reg_mr_iova2 / __ibv_reg_mr as well.
 *  - The data path must cost one native call per BATCH, not per I/O: Java writes compact descriptors into a direct
 *    buffer, and one call here turns them into a linked ibv_send_wr chain on the stack and posts it; one call polls
 *    many completions into compact records.
 *  - Struct layouts (ibv_mr, ibv_wc, rdma_cm_event, rdma_cm_id, ibv_device_attr) are read here with the real headers,
 *    so Java never hard-codes an rdma-core struct offset.
 *
 * Conventions: every pointer crosses the boundary as void* (a Java long); no struct crosses it except the compact
 * little-endian records of nvmeof_rdma.h, in caller-provided memory. Functions return 0 (or a count) on success and a
 * NEGATIVE errno on failure; Java turns that into an exception carrying strerror's text (nvr_strerror).
 *
 * Where things are: nvmeof_rdma.h the record layouts and conventions; rdma_post.c posting send and receive work
 * requests; rdma_poll.c polling completions; rdma_device.c devices, protection domains, memory registration;
 * rdma_cq.c completion queues, their channels, wake-ups and asynchronous events; rdma_qp.c shared receive queues
 * and queue pairs; rdma_cm.c RDMA CM (ids, connections, events).
 */
#include <string.h>

#include "nvmeof_rdma.h"

/* ------------------------------------------------------------------------------------------------------------ */
/* Housekeeping                                                                                                  */

NVR_EXPORT int nvr_abi_version(void) { return NVR_ABI_VERSION; }
NVR_EXPORT int nvr_send_desc_size(void) { return NVR_SEND_DESC_SIZE; }
NVR_EXPORT int nvr_recv_desc_size(void) { return NVR_RECV_DESC_SIZE; }
NVR_EXPORT int nvr_wc_size(void) { return NVR_WC_SIZE; }
NVR_EXPORT int nvr_max_batch(void) { return NVR_MAX_BATCH; }

/* The cheapest possible call: what the JMH benchmark measures as the fixed cost of one JNA direct-mapped call. */
NVR_EXPORT int nvr_noop(void) { return 0; }
NVR_EXPORT long nvr_add(long a, long b) { return a + b; }

NVR_EXPORT const char *nvr_strerror(int errnum) { return strerror(errnum < 0 ? -errnum : errnum); }
