/*
 * The I/O path: queue appends a submission to the ring shared with Java, commit hands Java the batch in one JNI call,
 * getevents reads completions from the ring with no JNI call (spinning briefly, then sleeping on the ring's futex),
 * event hands fio each one. The ring's layout is io.nvmeof.fio.SharedRing's.
 */
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>
#include <jni.h>

#include "fio.h"
#include "nvmeof_fio.h"

/* The shared memory's layout: io.nvmeof.fio.SharedRing has the same. */
#define RING_TAIL 0
#define RING_SLEEPING 64
#define RING_FUTEX 68
#define RING_WAKE_AT_BATCH_END 72
#define RING_CAPACITY 128
#define RING_SUBMIT_CAPACITY 132
#define RING_ENTRIES 192
#define RING_ENTRY 16
#define RING_SUBMISSION 32
#define OP_READ 1
#define OP_WRITE 2
#define OP_FLUSH 3
#define OP_TRIM 4
/*
 * How long getevents spins on the ring before it sleeps adapts per job, between SPIN_MIN and SPIN_MAX rounds: longer
 * while spinning catches completions (fast small I/O), shorter while it does not (large I/O). The ceiling is low:
 * a longer spin takes a CPU from the initiator's I/O thread or the target. Measured against ./nvmeof bench with fio
 * free to use two CPUs (docs/performance.md), 4 KiB QD 32 gave 0.88 of bench adapting up to 4,000 rounds and 1.03
 * fixed at 100; 128 KiB gave 0.97 and 0.96. NVMEOF_FIO_SPIN=N fixes it at N rounds.
 */
#define SPIN_MIN 16
#define SPIN_MAX 100
#define SPIN_START 100
static int spin_fixed = -1;
/*
 * When the initiator wakes a sleeping getevents: at the first completion (fio's thread then reaps the rest of the
 * I/O thread's batch while it comes in, on another CPU), or once the I/O thread has delivered its whole batch (with
 * one CPU for both, waking at the first only switches to fio's thread and back for each completion).
 * NVMEOF_FIO_WAKE=first|batch overrides the choice, made from the CPUs fio may use.
 */
static int wake_at_batch_end = -1;

/* The ring shared with Java for a queue depth (io.nvmeof.fio.SharedRing), and the job's tables of I/O; 0, or 1 with
 * fio's error set. */
int ring_alloc(struct thread_data *td, struct nvmeof_job *j, unsigned int depth)
{
	unsigned int ring = 1;

	while (ring < 2 * depth)
		ring <<= 1;
	j->ring_mask = ring - 1;
	j->submit_capacity = depth;
	j->index_capacity = depth + 1;
	j->shared_size = RING_ENTRIES + (size_t) ring * RING_ENTRY + (size_t) depth * RING_SUBMISSION;
	if (posix_memalign((void **) &j->shared, 4096, j->shared_size)) {
		td_verror(td, ENOMEM, "posix_memalign");
		return 1;
	}
	memset(j->shared, 0, j->shared_size);
	*(unsigned int *) (j->shared + RING_CAPACITY) = ring;
	*(unsigned int *) (j->shared + RING_SUBMIT_CAPACITY) = depth;
	j->queued_io = calloc(depth, sizeof(struct io_u *));
	j->events = calloc(depth, sizeof(struct io_u *));
	j->io_by_index = calloc(j->index_capacity, sizeof(struct io_u *));
	if (!j->queued_io || !j->events || !j->io_by_index) {
		td_verror(td, ENOMEM, "calloc");
		return 1;
	}
	return 0;
}

/* How getevents spins, and when Java wakes it ($NVMEOF_FIO_SPIN, $NVMEOF_FIO_WAKE, else chosen once per process). */
void ring_tune(struct nvmeof_job *j)
{
	if (spin_fixed < 0) {
		const char *e = getenv("NVMEOF_FIO_SPIN");
		const char *w = getenv("NVMEOF_FIO_WAKE");
		cpu_set_t cpus;
		int one_cpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) == 1;

		spin_fixed = e && e[0] ? atoi(e) : 0;
		wake_at_batch_end = w && !strcmp(w, "batch") ? 1 : w && !strcmp(w, "first") ? 0 : one_cpu;
	}
	*(unsigned int *) (j->shared + RING_WAKE_AT_BATCH_END) = (unsigned int) wake_at_batch_end;
	j->spin = spin_fixed > 0 ? spin_fixed : SPIN_START;
}

/* ------------------------------------------------------------------------------------------------ I/O */

enum fio_q_status nvmeof_queue(struct thread_data *td, struct io_u *io_u)
{
	struct nvmeof_job *j = td->io_ops_data;
	unsigned int file = io_u->file->fileno;
	int block;
	char *s;
	unsigned char op;

	fio_ro_check(td, io_u);
	switch (io_u->ddir) {
	case DDIR_READ:
		op = OP_READ;
		break;
	case DDIR_WRITE:
		op = OP_WRITE;
		break;
	case DDIR_TRIM:
		op = OP_TRIM;
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
		op = OP_FLUSH;
		break;
	default:
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	if (file >= j->nfiles) {
		log_err("nvmeof: I/O for file %u of a job of %u\n", file, j->nfiles);
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	block = j->files[file].block_size;
	if (op != OP_FLUSH && (io_u->offset % block || io_u->xfer_buflen % block)) {
		log_err("nvmeof: I/O at %llu of %llu bytes is not in whole %d-byte blocks\n",
			(unsigned long long) io_u->offset, (unsigned long long) io_u->xfer_buflen, block);
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	if (j->queued >= j->submit_capacity || io_u->index >= j->index_capacity)
		return FIO_Q_BUSY;
	s = j->shared + RING_ENTRIES + (size_t) (j->ring_mask + 1) * RING_ENTRY + (size_t) j->queued * RING_SUBMISSION;
	s[0] = (char) op;
	*(unsigned int *) (s + 4) = io_u->index;
	*(unsigned long long *) (s + 8) = io_u->offset / block;
	*(unsigned int *) (s + 16) = (unsigned int) (io_u->xfer_buflen / block);
	*(unsigned int *) (s + 20) = file;
	*(unsigned long long *) (s + 24) = op == OP_FLUSH ? 0
		: (unsigned long long) ((char *) io_u->xfer_buf - (char *) td->orig_buffer);
	j->io_by_index[io_u->index] = io_u;
	j->queued_io[j->queued++] = io_u;
	return FIO_Q_QUEUED;
}

int nvmeof_commit(struct thread_data *td)
{
	struct nvmeof_job *j = td->io_ops_data;
	JNIEnv *env;
	unsigned int n = j->queued;

	if (!n)
		return 0;
	if (fio_fill_issue_time(td)) {
		struct timespec now;

		fio_gettime(&now, NULL);
		for (unsigned int i = 0; i < n; i++) {
			memcpy(&j->queued_io[i]->issue_time, &now, sizeof(now));
			io_u_queued(td, j->queued_io[i]);
		}
	}
	env = current_env();
	j->queued = 0;
	(*env)->CallVoidMethod(env, j->job, m_submit, (jint) n);
	io_u_mark_submit(td, n);
	if ((*env)->ExceptionCheck(env)) {
		char msg[512];

		exception_text(env, msg, sizeof(msg));
		log_err("nvmeof: submitting %u I/Os: %s\n", n, msg);
		td_verror(td, EIO, "commit");
		return -EIO;
	}
	return 0;
}

/* Takes completions from the ring into events[] (no JNI call). */
static unsigned int reap(struct thread_data *td, struct nvmeof_job *j, unsigned int got, unsigned int max)
{
	while (got < max) {
		char *e = j->shared + RING_ENTRIES + (size_t) (j->head & j->ring_mask) * RING_ENTRY;
		unsigned long long seq = __atomic_load_n((unsigned long long *) e, __ATOMIC_ACQUIRE);
		unsigned int index;
		int status;
		struct io_u *io_u;

		if (seq != j->head + 1)
			break;
		index = *(unsigned int *) (e + 8);
		status = *(int *) (e + 12);
		j->head++;
		if (index >= j->index_capacity || !(io_u = j->io_by_index[index]))
			continue;
		io_u->resid = 0;
		if (status) {
			io_u->error = status == -1 ? ETIMEDOUT : EIO;
			if (!j->error_logged) {
				JNIEnv *env = current_env();
				jstring s = env ? (jstring) (*env)->CallStaticObjectMethod(env, job_class, m_describe, status) : NULL;
				const char *c = s ? (*env)->GetStringUTFChars(env, s, NULL) : NULL;

				log_err("nvmeof: I/O failed with %s (further failures are counted by fio, not logged)\n",
					c ? c : "an error");
				if (c)
					(*env)->ReleaseStringUTFChars(env, s, c);
				j->error_logged = 1;
			}
		}
		j->events[got++] = io_u;
	}
	return got;
}

/*
 * fio wants the job to end and waits for its I/O: its runtime is over (fio checks that only between I/Os, so not
 * while getevents waits), it was told to stop (Ctrl-C, SIGTERM, exitall), or an I/O failed.
 */
static int stopping(struct thread_data *td)
{
	return td->terminate || td->error
	       || (td->o.timeout && !in_ramp_time(td) && utime_since_now(&td->epoch) >= td->o.timeout);
}

/*
 * While fio is stopping, the I/O held for a target that is gone (its controller reconnecting) would keep the job until
 * ctrl_loss_tmo: the job fails that I/O instead (FioJob.abandonUnreachable), and fio counts it as errors. Runs only
 * before getevents sleeps.
 */
static void abandon_unreachable(struct nvmeof_job *j)
{
	JNIEnv *env = current_env();
	jstring said;

	if (!env)
		return;
	said = (jstring) (*env)->CallObjectMethod(env, j->job, m_abandon);
	if ((*env)->ExceptionCheck(env)) {
		char msg[512];

		exception_text(env, msg, sizeof(msg));
		log_err("nvmeof: failing the I/O of an unreachable target: %s\n", msg);
		return;
	}
	if (said) {
		const char *c = (*env)->GetStringUTFChars(env, said, NULL);

		if (c && !j->abandon_logged)
			log_err("nvmeof: %s\n", c);
		j->abandon_logged = 1;
		if (c)
			(*env)->ReleaseStringUTFChars(env, said, c);
		(*env)->DeleteLocalRef(env, said);
	}
}

int nvmeof_getevents(struct thread_data *td, unsigned int min, unsigned int max, const struct timespec *t)
{
	struct nvmeof_job *j = td->io_ops_data;
	unsigned int *sleeping = (unsigned int *) (j->shared + RING_SLEEPING);
	unsigned int *futex = (unsigned int *) (j->shared + RING_FUTEX);
	unsigned int got = 0;
	struct timespec start;
	int timed = t != NULL;

	if (timed)
		clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		got = reap(td, j, got, max);
		if (got >= min)
			return got;
		for (int spin = 0; spin < j->spin && got < min; spin++) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
			got = reap(td, j, got, max);
		}
		if (got >= min) {
			if (!spin_fixed && j->spin < SPIN_MAX)
				j->spin += j->spin / 8 + 1;
			return got;
		}
		if (!spin_fixed && j->spin > SPIN_MIN)
			j->spin -= j->spin / 4;
		if (stopping(td))
			abandon_unreachable(j);
		{
			unsigned int seen = __atomic_load_n(futex, __ATOMIC_SEQ_CST);
			struct timespec wait = { 0, 100 * 1000 * 1000 }; /* a bound, in case a wake-up is missed */

			__atomic_store_n(sleeping, 1, __ATOMIC_SEQ_CST);
			got = reap(td, j, got, max);
			if (got < min) {
				if (timed) {
					struct timespec now;
					long long left;

					clock_gettime(CLOCK_MONOTONIC, &now);
					left = (long long) (t->tv_sec - (now.tv_sec - start.tv_sec)) * 1000000000LL
					       + (t->tv_nsec - (now.tv_nsec - start.tv_nsec));
					if (left <= 0) {
						__atomic_store_n(sleeping, 0, __ATOMIC_SEQ_CST);
						return got;
					}
					if (left < 100000000LL) {
						wait.tv_sec = 0;
						wait.tv_nsec = left;
					}
				}
				syscall(SYS_futex, futex, FUTEX_WAIT_PRIVATE, seen, &wait, NULL, 0);
			}
			__atomic_store_n(sleeping, 0, __ATOMIC_SEQ_CST);
		}
	}
}

struct io_u *nvmeof_event(struct thread_data *td, int event)
{
	struct nvmeof_job *j = td->io_ops_data;

	return j->events[event];
}
