/*
 * rdma_device.c: the control path's devices, protection domains and memory (registrations, page-aligned buffers).
 */
#include <sys/mman.h>

#include "nvmeof_rdma.h"

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
