/*
 * nvmeof_rdma.c: the small C helper under io.nvmeof.rdma (libnvmeofrdma.so, loaded by JNA).
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
 * little-endian records below, in caller-provided memory. Functions return 0 (or a count) on success and a NEGATIVE
 * errno on failure; Java turns that into an exception carrying strerror's text (nvr_strerror).
 *
 * ---- Send descriptor: NVR_SEND_DESC_SIZE = 48 bytes, little-endian, 8-byte aligned ----
 *   0  u64 wr_id
 *   8  u64 local_addr        (one SGE; length 0 means no SGE)
 *  16  u64 remote_addr       (RDMA_WRITE / RDMA_READ)
 *  24  u32 length
 *  28  u32 lkey
 *  32  u32 rkey              (RDMA_WRITE / RDMA_READ)
 *  36  u32 invalidate_rkey   (SEND_WITH_INV)
 *  40  u8  opcode            NVR_OP_SEND 0, NVR_OP_SEND_WITH_INV 1, NVR_OP_RDMA_WRITE 2, NVR_OP_RDMA_READ 3
 *  41  u8  flags             NVR_F_SIGNALED 1, NVR_F_FENCE 2, NVR_F_INLINE 4, NVR_F_SOLICITED 8
 *  42  6 bytes reserved (write zero)
 *
 * ---- Receive descriptor: NVR_RECV_DESC_SIZE = 24 bytes ----
 *   0  u64 wr_id
 *   8  u64 addr
 *  16  u32 length
 *  20  u32 lkey
 *
 * ---- Completion record: NVR_WC_SIZE = 32 bytes ----
 *   0  u64 wr_id
 *   8  u32 status            (enum ibv_wc_status; 0 = success)
 *  12  u32 opcode            (enum ibv_wc_opcode: SEND 0, RDMA_WRITE 1, RDMA_READ 2, RECV 128, RECV_RDMA_WITH_IMM 129)
 *  16  u32 byte_len
 *  20  u32 wc_flags          (IBV_WC_WITH_IMM 2, IBV_WC_WITH_INV 8, ...)
 *  24  u32 imm_or_invalidated_rkey (imm in network order as delivered, or the rkey a SEND_WITH_INV invalidated)
 *  28  u32 qp_num
 *
 * x86-64 and aarch64 are little-endian, so the records are read and written with plain loads and stores.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define NVR_EXPORT __attribute__((visibility("default")))

/* Bumped whenever a record layout or a signature changes; Java refuses a helper of another version. */
#define NVR_ABI_VERSION 3

#define NVR_SEND_DESC_SIZE 48
#define NVR_RECV_DESC_SIZE 24
#define NVR_WC_SIZE 32
/* Upper bound of one post call: the wr/sge arrays live on the stack (64 * (128 + 16) bytes = 9 KiB). */
#define NVR_MAX_BATCH 64

enum { NVR_OP_SEND = 0, NVR_OP_SEND_WITH_INV = 1, NVR_OP_RDMA_WRITE = 2, NVR_OP_RDMA_READ = 3 };
enum { NVR_F_SIGNALED = 1, NVR_F_FENCE = 2, NVR_F_INLINE = 4, NVR_F_SOLICITED = 8 };

struct nvr_send_desc {
    uint64_t wr_id;
    uint64_t local_addr;
    uint64_t remote_addr;
    uint32_t length;
    uint32_t lkey;
    uint32_t rkey;
    uint32_t invalidate_rkey;
    uint8_t opcode;
    uint8_t flags;
    uint8_t reserved[6];
};

struct nvr_recv_desc {
    uint64_t wr_id;
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

struct nvr_wc {
    uint64_t wr_id;
    uint32_t status;
    uint32_t opcode;
    uint32_t byte_len;
    uint32_t wc_flags;
    uint32_t imm_or_invalidated_rkey;
    uint32_t qp_num;
};

/* The layouts above are the contract with Java (SendBatch, RecvBatch, CompletionBatch): fail the build if they drift. */
_Static_assert(sizeof(struct nvr_send_desc) == NVR_SEND_DESC_SIZE, "send descriptor size");
_Static_assert(offsetof(struct nvr_send_desc, opcode) == 40, "send descriptor opcode offset");
_Static_assert(sizeof(struct nvr_recv_desc) == NVR_RECV_DESC_SIZE, "recv descriptor size");
_Static_assert(sizeof(struct nvr_wc) == NVR_WC_SIZE, "completion record size");

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

/* librdmacm and libibverbs report failure as -1 (or NULL) plus errno; turn that into -errno for Java. */
static int neg_errno(void) { return errno > 0 ? -errno : -EIO; }
/* ibv_post_* return a positive errno value (not -1 + errno). */
static int neg_rc(int rc) { return rc > 0 ? -rc : (rc < 0 ? rc : 0); }

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

/* ------------------------------------------------------------------------------------------------------------ */
/* Control path: devices, protection domains, memory                                                             */

/* The ibv_device behind a context, for ibv_get_device_name. */
NVR_EXPORT void *nvr_context_device(void *context) {
    return context ? ((struct ibv_context *)context)->device : NULL;
}

/* Device attributes into out[16] (u64): max_qp_wr, max_sge, max_mr_size, max_qp_rd_atom, max_qp_init_rd_atom,
 * max_cqe, max_qp, max_mr, max_srq, max_srq_wr, max_cq, phys_port_cnt, vendor_id, vendor_part_id, page_size_cap,
 * atomic_cap. */
NVR_EXPORT int nvr_query_device(void *context, uint64_t *out) {
    struct ibv_device_attr a;
    int rc = ibv_query_device((struct ibv_context *)context, &a);
    if (rc) return neg_rc(rc);
    out[0] = (uint64_t)a.max_qp_wr;
    out[1] = (uint64_t)a.max_sge;
    out[2] = a.max_mr_size;
    out[3] = (uint64_t)a.max_qp_rd_atom;
    out[4] = (uint64_t)a.max_qp_init_rd_atom;
    out[5] = (uint64_t)a.max_cqe;
    out[6] = (uint64_t)a.max_qp;
    out[7] = (uint64_t)a.max_mr;
    out[8] = (uint64_t)a.max_srq;
    out[9] = (uint64_t)a.max_srq_wr;
    out[10] = (uint64_t)a.max_cq;
    out[11] = (uint64_t)a.phys_port_cnt;
    out[12] = (uint64_t)a.vendor_id;
    out[13] = (uint64_t)a.vendor_part_id;
    out[14] = a.page_size_cap;
    out[15] = (uint64_t)a.atomic_cap;
    return 0;
}

/* Port attributes into out[6] (u64): state (4 = ACTIVE), max_mtu, active_mtu (enum ibv_mtu: 1=256 .. 5=4096),
 * link_layer (1 InfiniBand, 2 Ethernet), gid_tbl_len, max_msg_sz. ibv_query_port is an inline wrapper. */
NVR_EXPORT int nvr_query_port(void *context, int port, uint64_t *out) {
    struct ibv_port_attr p;
    int rc = ibv_query_port((struct ibv_context *)context, (uint8_t)port, &p);
    if (rc) return neg_rc(rc);
    out[0] = (uint64_t)p.state;
    out[1] = (uint64_t)p.max_mtu;
    out[2] = (uint64_t)p.active_mtu;
    out[3] = (uint64_t)p.link_layer;
    out[4] = (uint64_t)p.gid_tbl_len;
    out[5] = (uint64_t)p.max_msg_sz;
    return 0;
}

NVR_EXPORT int nvr_alloc_pd(void *context, void **out) {
    struct ibv_pd *pd = ibv_alloc_pd((struct ibv_context *)context);
    if (!pd) return neg_errno();
    *out = pd;
    return 0;
}

NVR_EXPORT int nvr_dealloc_pd(void *pd) { return neg_rc(ibv_dealloc_pd((struct ibv_pd *)pd)); }

/* Registers [addr, addr + length) with a 64-bit length (size_t on LP64: registrations over 4 GiB work).
 * access: IBV_ACCESS_LOCAL_WRITE 1 | REMOTE_WRITE 2 | REMOTE_READ 4. out[4] (u64): mr pointer, mr->addr,
 * mr->length, (rkey << 32) | lkey: everything Java keeps about an MR, in one call. */
NVR_EXPORT int nvr_reg_mr(void *pd, void *addr, uint64_t length, int access, uint64_t *out) {
    if (pd == NULL || out == NULL || length == 0) return -EINVAL;
    struct ibv_mr *mr = ibv_reg_mr((struct ibv_pd *)pd, addr, (size_t)length, access);
    if (!mr) return neg_errno();
    out[0] = (uint64_t)(uintptr_t)mr;
    out[1] = (uint64_t)(uintptr_t)mr->addr;
    out[2] = (uint64_t)mr->length;
    out[3] = ((uint64_t)mr->rkey << 32) | mr->lkey;
    return 0;
}

NVR_EXPORT int nvr_dereg_mr(void *mr) { return neg_rc(ibv_dereg_mr((struct ibv_mr *)mr)); }
NVR_EXPORT uint32_t nvr_mr_lkey(void *mr) { return ((struct ibv_mr *)mr)->lkey; }
NVR_EXPORT uint32_t nvr_mr_rkey(void *mr) { return ((struct ibv_mr *)mr)->rkey; }
NVR_EXPORT void *nvr_mr_addr(void *mr) { return ((struct ibv_mr *)mr)->addr; }
NVR_EXPORT uint64_t nvr_mr_length(void *mr) { return ((struct ibv_mr *)mr)->length; }

/* Page-aligned anonymous memory for buffer pools and large registrations (mmap, not malloc: page alignment,
 * returned to the kernel on free, and MADV_HUGEPAGE so that pinning many GiB faults 2 MiB at a time).
 * out[0] = address. */
NVR_EXPORT int nvr_alloc_pages(uint64_t length, int huge, void **out) {
    void *p = mmap(NULL, (size_t)length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return neg_errno();
#ifdef MADV_HUGEPAGE
    if (huge) (void)madvise(p, (size_t)length, MADV_HUGEPAGE);
#endif
    *out = p;
    return 0;
}

NVR_EXPORT int nvr_free_pages(void *addr, uint64_t length) {
    return munmap(addr, (size_t)length) ? neg_errno() : 0;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Completion queues and channels                                                                                */

NVR_EXPORT int nvr_create_comp_channel(void *context, void **out) {
    struct ibv_comp_channel *ch = ibv_create_comp_channel((struct ibv_context *)context);
    if (!ch) return neg_errno();
    *out = ch;
    return 0;
}

NVR_EXPORT int nvr_destroy_comp_channel(void *channel) {
    return neg_rc(ibv_destroy_comp_channel((struct ibv_comp_channel *)channel));
}

/* out[0] = cq pointer, out[1] = actual number of entries (the provider may round up). channel may be NULL. */
NVR_EXPORT int nvr_create_cq(void *context, int cqe, void *channel, int comp_vector, uint64_t *out) {
    struct ibv_cq *cq = ibv_create_cq((struct ibv_context *)context, cqe, NULL, (struct ibv_comp_channel *)channel,
                                      comp_vector);
    if (!cq) return neg_errno();
    out[0] = (uint64_t)(uintptr_t)cq;
    out[1] = (uint64_t)cq->cqe;
    return 0;
}

NVR_EXPORT int nvr_destroy_cq(void *cq) { return neg_rc(ibv_destroy_cq((struct ibv_cq *)cq)); }

/* Waits up to timeout_ms (-1 forever) for a completion event on the channel and takes it (ibv_get_cq_event).
 * Returns 1 with *cq_out set, 0 on timeout, -errno on failure. The caller must ibv_ack_cq_events (nvr_ack_cq_events)
 * every event it took before destroying the CQ; acking is a mutex operation, so Java acks in batches. */
/* POLLERR/POLLHUP on a channel's descriptor: the device is gone (hot unplug, driver unbind). Reported as an error,
 * never as a timeout, or a poller that sleeps on the channel would wake at once for ever (a 100 % CPU spin). */
static int poll_failure(short revents) {
    if (revents & POLLNVAL) return -EBADF;
    if (revents & (POLLERR | POLLHUP)) return -ENODEV;
    return 0;
}

NVR_EXPORT int nvr_wait_comp_channel(void *channel, int timeout_ms, void **cq_out) {
    struct ibv_comp_channel *ch = (struct ibv_comp_channel *)channel;
    if (!ch || !cq_out) return -EBADF;
    struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc < 0) return errno == EINTR ? 0 : neg_errno();
    if (rc == 0) return 0;
    if (!(pfd.revents & POLLIN) && poll_failure(pfd.revents)) return poll_failure(pfd.revents);
    struct ibv_cq *cq = NULL;
    void *ctx = NULL;
    if (ibv_get_cq_event(ch, &cq, &ctx)) return neg_errno();
    *cq_out = cq;
    return 1;
}

/* A poller that sleeps on a completion channel must also wake when another thread hands it work (an initiator's
 * submitter): an eventfd polled together with the channel. Signalled only when the poller said it is about to sleep,
 * so busy periods cost no system call per I/O. */
NVR_EXPORT int nvr_wakeup_create(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? neg_errno() : fd;
}

NVR_EXPORT int nvr_wakeup_signal(int fd) {
    if (fd < 0) return -EBADF;
    uint64_t one = 1;
    ssize_t n = write(fd, &one, sizeof(one));
    return n == (ssize_t)sizeof(one) || errno == EAGAIN ? 0 : neg_errno();
}

NVR_EXPORT int nvr_wakeup_close(int fd) { return close(fd) ? neg_errno() : 0; }

/* As nvr_wait_comp_channel, but also returns when wake_fd is signalled (the signal is consumed): 1 with *cq_out set
 * for a CQ event (a pending wakeup is consumed as well), 2 for a wakeup alone, 0 on timeout, -errno on failure. */
NVR_EXPORT int nvr_wait_comp_channel_or_wakeup(void *channel, int wake_fd, int timeout_ms, void **cq_out) {
    struct ibv_comp_channel *ch = (struct ibv_comp_channel *)channel;
    if (!ch || !cq_out || wake_fd < 0) return -EBADF;
    struct pollfd pfd[2] = {{.fd = ch->fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
    int rc = poll(pfd, 2, timeout_ms);
    if (rc < 0) return errno == EINTR ? 0 : neg_errno();
    if (rc == 0) return 0;
    if (!(pfd[0].revents & POLLIN) && poll_failure(pfd[0].revents)) return poll_failure(pfd[0].revents);
    if (!(pfd[1].revents & POLLIN) && poll_failure(pfd[1].revents)) return poll_failure(pfd[1].revents);
    int woken = 0;
    if (pfd[1].revents & POLLIN) {
        uint64_t v;
        if (read(wake_fd, &v, sizeof(v)) == (ssize_t)sizeof(v)) woken = 1;
    }
    if (pfd[0].revents & POLLIN) {
        struct ibv_cq *cq = NULL;
        void *ctx = NULL;
        if (ibv_get_cq_event(ch, &cq, &ctx)) return errno == EAGAIN ? (woken ? 2 : 0) : neg_errno();
        *cq_out = cq;
        return 1;
    }
    return woken ? 2 : 0;
}

NVR_EXPORT void nvr_ack_cq_events(void *cq, int n) {
    if (cq && n > 0) ibv_ack_cq_events((struct ibv_cq *)cq, (unsigned int)n);
}

NVR_EXPORT int nvr_comp_channel_fd(void *channel) {
    return channel ? ((struct ibv_comp_channel *)channel)->fd : -EBADF;
}

/* Takes the device's next asynchronous event (CQ overrun, QP fatal or access error, port up or down, device fatal),
 * waiting up to timeout_ms, and acknowledges it. out[4] (u64): 0 event type (enum ibv_event_type), 1 the QP number
 * for QP events, 2 the CQ pointer for CQ events, 3 the port for port events. Returns 1, 0 when there was none, or
 * -errno. The context's async descriptor is made non-blocking, so this never waits past timeout_ms. */
NVR_EXPORT int nvr_get_async_event(void *context, int timeout_ms, uint64_t *out) {
    struct ibv_context *ctx = (struct ibv_context *)context;
    if (!ctx || !out) return -EBADF;
    int flags = fcntl(ctx->async_fd, F_GETFL);
    if (flags < 0) return neg_errno();
    if (!(flags & O_NONBLOCK) && fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0) return neg_errno();
    struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc < 0) return errno == EINTR ? 0 : neg_errno();
    if (rc == 0) return 0;
    if (!(pfd.revents & POLLIN) && poll_failure(pfd.revents)) return poll_failure(pfd.revents);
    struct ibv_async_event ev;
    if (ibv_get_async_event(ctx, &ev)) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : neg_errno();
    memset(out, 0, 4 * sizeof(uint64_t));
    out[0] = (uint64_t)ev.event_type;
    switch (ev.event_type) {
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_PATH_MIG:
        case IBV_EVENT_PATH_MIG_ERR:
        case IBV_EVENT_QP_LAST_WQE_REACHED:
            out[1] = ev.element.qp ? ev.element.qp->qp_num : 0;
            break;
        case IBV_EVENT_CQ_ERR:
            out[2] = (uint64_t)(uintptr_t)ev.element.cq;
            break;
        case IBV_EVENT_PORT_ACTIVE:
        case IBV_EVENT_PORT_ERR:
        case IBV_EVENT_LID_CHANGE:
        case IBV_EVENT_PKEY_CHANGE:
        case IBV_EVENT_SM_CHANGE:
        case IBV_EVENT_CLIENT_REREGISTER:
        case IBV_EVENT_GID_CHANGE:
            out[3] = (uint64_t)ev.element.port_num;
            break;
        default:
            break;
    }
    ibv_ack_async_event(&ev);
    return 1;
}

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

/* ------------------------------------------------------------------------------------------------------------ */
/* RDMA CM                                                                                                       */

NVR_EXPORT int nvr_create_event_channel(void **out) {
    struct rdma_event_channel *ch = rdma_create_event_channel();
    if (!ch) return neg_errno();
    /* Non-blocking, as SPDK makes it: events are waited for with poll(), and rdma_get_cm_event must never block. */
    int flags = fcntl(ch->fd, F_GETFL);
    if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        int e = neg_errno();
        rdma_destroy_event_channel(ch);
        return e;
    }
    *out = ch;
    return 0;
}

NVR_EXPORT int nvr_event_channel_fd(void *channel) { return ((struct rdma_event_channel *)channel)->fd; }

/* rdma_create_id in the TCP port space (RC, what NVMe/RDMA uses). */
NVR_EXPORT int nvr_create_id(void *channel, void *context, void **out) {
    struct rdma_cm_id *id = NULL;
    if (rdma_create_id((struct rdma_event_channel *)channel, &id, context, RDMA_PS_TCP)) return neg_errno();
    *out = id;
    return 0;
}

NVR_EXPORT int nvr_destroy_id(void *id) { return rdma_destroy_id((struct rdma_cm_id *)id) ? neg_errno() : 0; }

NVR_EXPORT int nvr_bind_addr(void *id, void *sockaddr) {
    return rdma_bind_addr((struct rdma_cm_id *)id, (struct sockaddr *)sockaddr) ? neg_errno() : 0;
}

NVR_EXPORT int nvr_listen(void *id, int backlog) {
    return rdma_listen((struct rdma_cm_id *)id, backlog) ? neg_errno() : 0;
}

/* src may be NULL. Completes with RDMA_CM_EVENT_ADDR_RESOLVED (or ADDR_ERROR) on the id's channel. */
NVR_EXPORT int nvr_resolve_addr(void *id, void *src, void *dst, int timeout_ms) {
    return rdma_resolve_addr((struct rdma_cm_id *)id, (struct sockaddr *)src, (struct sockaddr *)dst, timeout_ms)
               ? neg_errno() : 0;
}

NVR_EXPORT int nvr_resolve_route(void *id, int timeout_ms) {
    return rdma_resolve_route((struct rdma_cm_id *)id, timeout_ms) ? neg_errno() : 0;
}

/* Host-order local port of a bound id (rdma_get_src_port gives network order). */
NVR_EXPORT int nvr_id_src_port(void *id) { return ntohs(rdma_get_src_port((struct rdma_cm_id *)id)); }
/* Host-order peer port of a connected or connecting id (a connect request's id: the host's source port). */
NVR_EXPORT int nvr_id_dst_port(void *id) { return ntohs(rdma_get_dst_port((struct rdma_cm_id *)id)); }
NVR_EXPORT void *nvr_id_verbs(void *id) { return ((struct rdma_cm_id *)id)->verbs; }
NVR_EXPORT void *nvr_id_qp(void *id) { return ((struct rdma_cm_id *)id)->qp; }
NVR_EXPORT void *nvr_id_pd(void *id) { return ((struct rdma_cm_id *)id)->pd; }
NVR_EXPORT int nvr_id_port_num(void *id) { return ((struct rdma_cm_id *)id)->port_num; }

NVR_EXPORT void nvr_destroy_qp(void *id) { rdma_destroy_qp((struct rdma_cm_id *)id); }

static void fill_conn_param(struct rdma_conn_param *p, const void *pdata, int pdata_len, int responder_resources,
                            int initiator_depth, int retry_count, int rnr_retry_count) {
    memset(p, 0, sizeof(*p));
    p->private_data = pdata;
    p->private_data_len = (uint8_t)pdata_len;
    p->responder_resources = (uint8_t)responder_resources;
    p->initiator_depth = (uint8_t)initiator_depth;
    p->retry_count = (uint8_t)retry_count;
    p->rnr_retry_count = (uint8_t)rnr_retry_count;
}

/* Private data is at most 56 bytes for a connect (REQ) and 196 for an accept (REP) or reject on IB/RoCE; the
 * receiving side sees it zero-padded to that size. */
NVR_EXPORT int nvr_connect(void *id, void *pdata, int pdata_len, int responder_resources, int initiator_depth,
                           int retry_count, int rnr_retry_count) {
    if (pdata_len < 0 || pdata_len > 255) return -EINVAL;
    struct rdma_conn_param p;
    fill_conn_param(&p, pdata, pdata_len, responder_resources, initiator_depth, retry_count, rnr_retry_count);
    return rdma_connect((struct rdma_cm_id *)id, &p) ? neg_errno() : 0;
}

NVR_EXPORT int nvr_accept(void *id, void *pdata, int pdata_len, int responder_resources, int initiator_depth,
                          int retry_count, int rnr_retry_count) {
    if (pdata_len < 0 || pdata_len > 255) return -EINVAL;
    struct rdma_conn_param p;
    fill_conn_param(&p, pdata, pdata_len, responder_resources, initiator_depth, retry_count, rnr_retry_count);
    return rdma_accept((struct rdma_cm_id *)id, &p) ? neg_errno() : 0;
}

NVR_EXPORT int nvr_reject(void *id, void *pdata, int pdata_len) {
    if (pdata_len < 0 || pdata_len > 255) return -EINVAL;
    return rdma_reject((struct rdma_cm_id *)id, pdata, (uint8_t)pdata_len) ? neg_errno() : 0;
}

NVR_EXPORT int nvr_disconnect(void *id) { return rdma_disconnect((struct rdma_cm_id *)id) ? neg_errno() : 0; }

/* Waits up to timeout_ms (-1 forever) for the next CM event. Returns 1 with *event_out set (ack it with
 * nvr_ack_cm_event once its fields are read), 0 on timeout, -errno on failure. */
NVR_EXPORT int nvr_wait_cm_event(void *channel, int timeout_ms, void **event_out) {
    struct rdma_event_channel *ch = (struct rdma_event_channel *)channel;
    if (!ch || !event_out) return -EBADF;
    struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc < 0) return errno == EINTR ? 0 : neg_errno();
    if (rc == 0) return 0;
    if (!(pfd.revents & POLLIN) && poll_failure(pfd.revents)) return poll_failure(pfd.revents);
    struct rdma_cm_event *ev = NULL;
    /* The descriptor is non-blocking (nvr_create_event_channel): librdmacm retries internally, and on a blocking
     * descriptor that could wait past timeout_ms while Java holds the channel's lock, so close would hang. */
    if (rdma_get_cm_event(ch, &ev)) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : neg_errno();
    *event_out = ev;
    return 1;
}

NVR_EXPORT int nvr_ack_cm_event(void *event) { return rdma_ack_cm_event((struct rdma_cm_event *)event) ? neg_errno() : 0; }

/* Everything Java reads from an rdma_cm_event, in one call. out[8] (u64):
 *   0 event type (enum rdma_cm_event_type)   1 status (signed; for REJECTED the IB reject reason)
 *   2 id pointer (for CONNECT_REQUEST: the NEW id of the incoming connection)
 *   3 listen_id pointer (CONNECT_REQUEST only, else 0)
 *   4 private data pointer (valid until the event is acked; 0 if none)
 *   5 private data length
 *   6 responder_resources | initiator_depth << 8 | retry_count << 16 | rnr_retry_count << 24 | srq << 32
 *   7 qp_num of the remote side (from param.conn)
 * Private data is in param.conn for CONNECT_REQUEST, ESTABLISHED (active side: the accept's data), REJECTED and
 * CONNECT_RESPONSE. */
NVR_EXPORT int nvr_cm_event_info(void *event, uint64_t *out) {
    struct rdma_cm_event *ev = (struct rdma_cm_event *)event;
    memset(out, 0, 8 * sizeof(uint64_t));
    out[0] = (uint64_t)ev->event;
    out[1] = (uint64_t)(int64_t)ev->status;
    out[2] = (uint64_t)(uintptr_t)ev->id;
    out[3] = (uint64_t)(uintptr_t)ev->listen_id;
    switch (ev->event) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_ESTABLISHED:
    case RDMA_CM_EVENT_REJECTED: {
        const struct rdma_conn_param *c = &ev->param.conn;
        out[4] = (uint64_t)(uintptr_t)c->private_data;
        out[5] = c->private_data ? c->private_data_len : 0;
        out[6] = (uint64_t)c->responder_resources | (uint64_t)c->initiator_depth << 8 |
                 (uint64_t)c->retry_count << 16 | (uint64_t)c->rnr_retry_count << 24 | (uint64_t)c->srq << 32;
        out[7] = c->qp_num;
        break;
    }
    default:
        break;
    }
    return 0;
}

NVR_EXPORT int nvr_cm_event_type(void *event) { return ((struct rdma_cm_event *)event)->event; }
NVR_EXPORT int nvr_cm_event_status(void *event) { return ((struct rdma_cm_event *)event)->status; }
NVR_EXPORT void *nvr_cm_event_id(void *event) { return ((struct rdma_cm_event *)event)->id; }
NVR_EXPORT void *nvr_cm_event_listen_id(void *event) { return ((struct rdma_cm_event *)event)->listen_id; }
