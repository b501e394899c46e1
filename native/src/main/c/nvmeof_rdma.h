/*
 * nvmeof_rdma.h: what the parts of libnvmeofrdma.so share: the ABI version, the compact records Java writes and
 * reads (the contract with SendBatch, RecvBatch and CompletionBatch), and the errno conventions. Nothing here is
 * exported: build.sh compiles with -fvisibility=hidden, and only the NVR_EXPORT functions are visible to JNA.
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
#ifndef NVMEOF_RDMA_H
#define NVMEOF_RDMA_H

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
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

/* librdmacm and libibverbs report failure as -1 (or NULL) plus errno; turn that into -errno for Java. */
static inline int neg_errno(void) { return errno > 0 ? -errno : -EIO; }
/* ibv_post_* return a positive errno value (not -1 + errno). */
static inline int neg_rc(int rc) { return rc > 0 ? -rc : (rc < 0 ? rc : 0); }

/* POLLERR/POLLHUP on a channel's descriptor: the device is gone (hot unplug, driver unbind). Reported as an error,
 * never as a timeout, or a poller that sleeps on the channel would wake at once for ever (a 100 % CPU spin). */
static inline int poll_failure(short revents) {
    if (revents & POLLNVAL) return -EBADF;
    if (revents & (POLLERR | POLLHUP)) return -ENODEV;
    return 0;
}

#endif
