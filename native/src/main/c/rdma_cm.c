/*
 * rdma_cm.c: RDMA CM: event channels, ids, address and route resolution, connect / accept / reject /
 * disconnect, and reading CM events.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <string.h>

#include "nvmeof_rdma.h"

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
/* The peer's IP address: 4 or 16 bytes copied to out (16 bytes long), or 0 where the id has no IP peer. */
NVR_EXPORT int nvr_id_dst_addr(void *id, unsigned char *out) {
    struct sockaddr *sa = rdma_get_peer_addr((struct rdma_cm_id *)id);
    if (sa->sa_family == AF_INET) {
        memcpy(out, &((struct sockaddr_in *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(out, &((struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return 16;
    }
    return 0;
}
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
