/*
 * rdma_cq.c: completion queues and their channels: waiting for a completion event (or a wake-up from another
 * thread), and the device's asynchronous events.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nvmeof_rdma.h"

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
