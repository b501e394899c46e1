/*
 * nvmeof_uring.c: io_uring for the JVM, through the raw system calls (no liburing: <linux/io_uring.h> is all it needs).
 *
 * Only the control path is here: setting a ring up (io_uring_setup and the three mappings), io_uring_enter, the ring's
 * eventfd, and opening a file or block device with what the target needs to know about it. The data path is in Java
 * (io.nvmeof.uring.IoUring): it writes submission entries straight into the mapped SQ ring and reads completions
 * straight from the CQ ring, so one io_uring_enter per batch is the only native call per batch and there is none per
 * I/O. Every function returns 0 or a count on success and -errno on failure; nothing here keeps state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NVU_EXPORT __attribute__((visibility("default")))
/* Bumped whenever a signature or a record below changes; io.nvmeof.uring.UringLibrary checks it. */
#define NVU_ABI_VERSION 2

/* Indexes of the long[] nvu_setup fills (io.nvmeof.uring.IoUring reads the same). */
enum {
    RING_FD, RING_SQ_ENTRIES, RING_CQ_ENTRIES, RING_FEATURES,
    RING_SQ_HEAD, RING_SQ_TAIL, RING_SQ_MASK, RING_SQ_FLAGS, RING_SQES,
    RING_CQ_HEAD, RING_CQ_TAIL, RING_CQ_MASK, RING_CQES, RING_CQ_OVERFLOW,
    RING_SQ_MAP, RING_SQ_MAP_SIZE, RING_CQ_MAP, RING_CQ_MAP_SIZE, RING_SQES_SIZE, RING_CQ_FLAGS,
    RING_INFO_LENGTH
};

/* nvu_open's how bits (arch independent: O_DIRECT's value differs between architectures). */
#define NVU_OPEN_WRITE 1
#define NVU_OPEN_DIRECT 2
#define NVU_OPEN_EXCLUSIVE 4
#define NVU_OPEN_NOFOLLOW 8

/* Indexes of the long[] nvu_open fills. */
enum {
    FILE_IS_BLOCK_DEVICE, FILE_SIZE, FILE_LOGICAL_BLOCK, FILE_PHYSICAL_BLOCK, FILE_DIO_MEM_ALIGN,
    FILE_DIO_OFFSET_ALIGN, FILE_READ_ONLY, FILE_ST_BLKSIZE, FILE_DEV_MAJOR, FILE_DEV_MINOR,
    FILE_INFO_LENGTH
};

/* nvu_space's operations. */
#define NVU_SPACE_PUNCH_HOLE 1
#define NVU_SPACE_ZERO_RANGE 2
#define NVU_SPACE_BLKDISCARD 3
#define NVU_SPACE_BLKZEROOUT 4

NVU_EXPORT int nvu_abi_version(void) { return NVU_ABI_VERSION; }
NVU_EXPORT int nvu_ring_info_length(void) { return RING_INFO_LENGTH; }
NVU_EXPORT int nvu_file_info_length(void) { return FILE_INFO_LENGTH; }
NVU_EXPORT int nvu_sqe_size(void) { return (int)sizeof(struct io_uring_sqe); }
NVU_EXPORT int nvu_cqe_size(void) { return (int)sizeof(struct io_uring_cqe); }
NVU_EXPORT const char *nvu_strerror(int errnum) { return strerror(errnum); }

static int neg_errno(void) { return errno > 0 ? -errno : -EIO; }

/*
 * Sets a ring up for `entries` submissions (clamped by the kernel) and maps its SQ ring, CQ ring and SQE array.
 * Every SQ array slot i holds i for life, so Java places a submission at sqes[tail & mask] and only moves the tail.
 */
NVU_EXPORT int nvu_setup(int entries, int flags, int64_t *out) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = (unsigned)flags | IORING_SETUP_CLAMP;
    int fd = (int)syscall(__NR_io_uring_setup, (unsigned)entries, &p);
    if (fd < 0) {
        return neg_errno();
    }
    size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
    size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    int single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && cq_size > sq_size) {
        sq_size = cq_size;
    }
    void *sq = mmap(NULL, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    if (sq == MAP_FAILED) {
        int e = neg_errno();
        close(fd);
        return e;
    }
    void *cq = sq;
    if (!single) {
        cq = mmap(NULL, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
        if (cq == MAP_FAILED) {
            int e = neg_errno();
            munmap(sq, sq_size);
            close(fd);
            return e;
        }
    }
    size_t sqes_size = p.sq_entries * sizeof(struct io_uring_sqe);
    void *sqes = mmap(NULL, sqes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (sqes == MAP_FAILED) {
        int e = neg_errno();
        if (cq != sq) {
            munmap(cq, cq_size);
        }
        munmap(sq, sq_size);
        close(fd);
        return e;
    }
    uint32_t *array = (uint32_t *)((char *)sq + p.sq_off.array);
    for (uint32_t i = 0; i < p.sq_entries; i++) {
        array[i] = i;
    }
    out[RING_FD] = fd;
    out[RING_SQ_ENTRIES] = p.sq_entries;
    out[RING_CQ_ENTRIES] = p.cq_entries;
    out[RING_FEATURES] = p.features;
    out[RING_SQ_HEAD] = (int64_t)(uintptr_t)((char *)sq + p.sq_off.head);
    out[RING_SQ_TAIL] = (int64_t)(uintptr_t)((char *)sq + p.sq_off.tail);
    out[RING_SQ_MASK] = *(uint32_t *)((char *)sq + p.sq_off.ring_mask);
    out[RING_SQ_FLAGS] = (int64_t)(uintptr_t)((char *)sq + p.sq_off.flags);
    out[RING_SQES] = (int64_t)(uintptr_t)sqes;
    out[RING_CQ_HEAD] = (int64_t)(uintptr_t)((char *)cq + p.cq_off.head);
    out[RING_CQ_TAIL] = (int64_t)(uintptr_t)((char *)cq + p.cq_off.tail);
    out[RING_CQ_MASK] = *(uint32_t *)((char *)cq + p.cq_off.ring_mask);
    out[RING_CQES] = (int64_t)(uintptr_t)((char *)cq + p.cq_off.cqes);
    out[RING_CQ_OVERFLOW] = (int64_t)(uintptr_t)((char *)cq + p.cq_off.overflow);
    out[RING_SQ_MAP] = (int64_t)(uintptr_t)sq;
    out[RING_SQ_MAP_SIZE] = (int64_t)sq_size;
    out[RING_CQ_MAP] = cq == sq ? 0 : (int64_t)(uintptr_t)cq;
    out[RING_CQ_MAP_SIZE] = cq == sq ? 0 : (int64_t)cq_size;
    out[RING_SQES_SIZE] = (int64_t)sqes_size;
    /* 0 on kernels before 5.8, which have no CQ flags (the eventfd then always fires). */
    out[RING_CQ_FLAGS] = p.cq_off.flags == 0 ? 0 : (int64_t)(uintptr_t)((char *)cq + p.cq_off.flags);
    return 0;
}

/* Unmaps what nvu_setup mapped and closes the ring (the kernel cancels what is still in flight). */
NVU_EXPORT int nvu_teardown(const int64_t *info) {
    munmap((void *)(uintptr_t)info[RING_SQES], (size_t)info[RING_SQES_SIZE]);
    if (info[RING_CQ_MAP] != 0) {
        munmap((void *)(uintptr_t)info[RING_CQ_MAP], (size_t)info[RING_CQ_MAP_SIZE]);
    }
    munmap((void *)(uintptr_t)info[RING_SQ_MAP], (size_t)info[RING_SQ_MAP_SIZE]);
    return close((int)info[RING_FD]) == 0 ? 0 : neg_errno();
}

/* io_uring_enter: submits `to_submit` entries and, with min_complete > 0, waits for that many completions. */
NVU_EXPORT int nvu_enter(int ring_fd, int to_submit, int min_complete) {
    unsigned flags = min_complete > 0 ? IORING_ENTER_GETEVENTS : 0;
    int r = (int)syscall(__NR_io_uring_enter, ring_fd, (unsigned)to_submit, (unsigned)min_complete, flags, NULL, 0);
    return r < 0 ? neg_errno() : r;
}

/* Caps the kernel's worker threads for this ring (bounded and unbounded work: fsync, fallocate, buffered I/O). */
NVU_EXPORT int nvu_max_workers(int ring_fd, int bounded, int unbounded) {
    unsigned counts[2] = {(unsigned)bounded, (unsigned)unbounded};
    int r = (int)syscall(__NR_io_uring_register, ring_fd, IORING_REGISTER_IOWQ_MAX_WORKERS, counts, 2);
    return r < 0 ? neg_errno() : 0;
}

/* A non-blocking eventfd the kernel signals on every completion posted to the ring: what an idle poll group waits on. */
NVU_EXPORT int nvu_register_eventfd(int ring_fd) {
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) {
        return neg_errno();
    }
    if (syscall(__NR_io_uring_register, ring_fd, IORING_REGISTER_EVENTFD, &efd, 1) < 0) {
        int e = neg_errno();
        close(efd);
        return e;
    }
    return efd;
}

/* Waits up to timeout_ms (-1: no limit) for the eventfd and clears it: 1 when it was signaled, 0 on timeout. */
NVU_EXPORT int nvu_wait_eventfd(int efd, int timeout_ms) {
    struct pollfd pfd = {.fd = efd, .events = POLLIN};
    int r = poll(&pfd, 1, timeout_ms);
    if (r < 0) {
        return errno == EINTR ? 0 : neg_errno();
    }
    if (r == 0) {
        return 0;
    }
    uint64_t v;
    if (read(efd, &v, sizeof v) < 0 && errno != EAGAIN) {
        return neg_errno();
    }
    return 1;
}

/* Signals the eventfd from user space (a waiter is woken to stop). */
NVU_EXPORT int nvu_signal_eventfd(int efd) {
    uint64_t one = 1;
    return write(efd, &one, sizeof one) == (ssize_t)sizeof one ? 0 : neg_errno();
}

NVU_EXPORT int nvu_close(int fd) { return close(fd) == 0 ? 0 : neg_errno(); }

/*
 * Opens an existing file or block device for the target's I/O (never creates one: the caller has made it, with its
 * own checks of the path) and says what it is: block device or not, size, logical and physical block size, the
 * alignment direct I/O needs (statx's DIOALIGN where the kernel has it, else the logical block size), read-only.
 */
NVU_EXPORT int nvu_open(const char *path, int how, int64_t *out) {
    int flags = O_CLOEXEC | O_LARGEFILE | ((how & NVU_OPEN_WRITE) ? O_RDWR : O_RDONLY);
    if (how & NVU_OPEN_DIRECT) {
        flags |= O_DIRECT;
    }
    if (how & NVU_OPEN_EXCLUSIVE) {
        flags |= O_EXCL; /* on a block device: refused with EBUSY while it is mounted or held */
    }
    if (how & NVU_OPEN_NOFOLLOW) {
        flags |= O_NOFOLLOW;
    }
    int fd = open(path, flags);
    if (fd < 0) {
        return neg_errno();
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = neg_errno();
        close(fd);
        return e;
    }
    memset(out, 0, FILE_INFO_LENGTH * sizeof(int64_t));
    out[FILE_ST_BLKSIZE] = st.st_blksize;
    if (S_ISBLK(st.st_mode)) {
        uint64_t size = 0;
        int lbs = 0;
        unsigned int pbs = 0;
        int ro = 0;
        if (ioctl(fd, BLKGETSIZE64, &size) != 0 || ioctl(fd, BLKSSZGET, &lbs) != 0) {
            int e = neg_errno();
            close(fd);
            return e;
        }
        if (ioctl(fd, BLKPBSZGET, &pbs) != 0) {
            pbs = (unsigned)lbs;
        }
        if (ioctl(fd, BLKROGET, &ro) != 0) {
            ro = 0;
        }
        out[FILE_IS_BLOCK_DEVICE] = 1;
        out[FILE_SIZE] = (int64_t)size;
        out[FILE_LOGICAL_BLOCK] = lbs;
        out[FILE_PHYSICAL_BLOCK] = pbs;
        out[FILE_DIO_MEM_ALIGN] = lbs;
        out[FILE_DIO_OFFSET_ALIGN] = lbs;
        out[FILE_READ_ONLY] = ro;
        out[FILE_DEV_MAJOR] = major(st.st_rdev);
        out[FILE_DEV_MINOR] = minor(st.st_rdev);
    } else if (S_ISREG(st.st_mode)) {
        out[FILE_SIZE] = st.st_size;
        out[FILE_LOGICAL_BLOCK] = 512;
        out[FILE_PHYSICAL_BLOCK] = st.st_blksize;
        out[FILE_DIO_MEM_ALIGN] = 512;
        out[FILE_DIO_OFFSET_ALIGN] = 512;
#ifdef STATX_DIOALIGN
        struct statx sx;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)
                && sx.stx_dio_offset_align != 0) {
            out[FILE_DIO_MEM_ALIGN] = sx.stx_dio_mem_align;
            out[FILE_DIO_OFFSET_ALIGN] = sx.stx_dio_offset_align;
        }
#endif
        out[FILE_DEV_MAJOR] = major(st.st_dev);
        out[FILE_DEV_MINOR] = minor(st.st_dev);
    } else {
        close(fd);
        return -EINVAL; /* neither a regular file nor a block device */
    }
    return fd;
}

/*
 * Space operations that may block for long (the caller runs them off the poll groups): a file's hole punching and
 * zeroing (fallocate, keeping its size), a block device's discard and zeroing (BLKDISCARD, BLKZEROOUT).
 */
NVU_EXPORT int nvu_space(int fd, int op, int64_t offset, int64_t length) {
    uint64_t range[2] = {(uint64_t)offset, (uint64_t)length};
    int r;
    switch (op) {
    case NVU_SPACE_PUNCH_HOLE:
        r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
        break;
    case NVU_SPACE_ZERO_RANGE:
        r = fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, offset, length);
        break;
    case NVU_SPACE_BLKDISCARD:
        r = ioctl(fd, BLKDISCARD, range);
        break;
    case NVU_SPACE_BLKZEROOUT:
        r = ioctl(fd, BLKZEROOUT, range);
        break;
    default:
        return -EINVAL;
    }
    return r == 0 ? 0 : neg_errno();
}
