/*
 * What the fio engine's parts share: its options, its per-job state, the JVM and the FioJob methods, the ring's I/O
 * hooks, the settings it hands Java, and where the JVM and the initiator's jar are. nvmeof_fio.c holds the engine's
 * setup, init, cleanup and memory hooks and its hook table, options.c the option table and its check, jvm.c the JNI
 * bridge, io_path.c queue/commit/getevents/event, probe.c the settings and the probe, java_paths.c the paths,
 * spdk_filename.c the reading of filename=. Everything here is internal to the engine (hidden, see build.sh).
 */
#ifndef NVMEOF_FIO_H
#define NVMEOF_FIO_H

#include <stddef.h>
#include <jni.h>

#include "fio.h"
#include "spdk_filename.h"

struct nvmeof_options {
	void *pad; /* an option at offset 0 would read as "not set" (see fio's skeleton_external.c) */
	char *trtype;
	char *traddr;
	char *trsvcid;
	char *subnqn;
	unsigned int nsid;
	char *hostnqn;
	unsigned int io_queues;
	unsigned int busy_poll_us;
	/* Strings, read by check_options: fio retries a refused integer after its "-" (a range), so "-2" became 2. */
	char *ctrl_loss_tmo;
	char *fast_io_fail_tmo;
	char *reconnect_delay;
	/* ... in seconds, -1 for forever or off */
	int ctrl_loss_s;
	int fast_io_fail_s;
	int reconnect_delay_s;
	unsigned int hdr_digest;
	unsigned int data_digest;
	char *digest_enable;
	char *java_classpath;
	char *java_opts;
	char *jvm;
};

/* One fio file: where its I/O goes, and what the probe found there. */
struct nvmeof_file {
	struct nvmeof_target target;
	unsigned long long size;
	unsigned long long max_io;
	int block_size;
};

/* Per job. */
struct nvmeof_job {
	struct nvmeof_file *files; /* one per fio file, in fio's order (the submission's file index) */
	unsigned int nfiles;
	char *shared;           /* the ring shared with Java */
	size_t shared_size;
	unsigned int ring_mask;
	unsigned int submit_capacity;
	unsigned long long head; /* next completion to take */
	unsigned int queued;     /* submissions written since the last commit */
	struct io_u **queued_io;
	struct io_u **io_by_index;
	unsigned int index_capacity;
	struct io_u **events;
	jobject job;             /* the FioJob (a global reference) */
	int attached;            /* this thread was attached by us (to detach at cleanup) */
	int spin;                /* rounds getevents spins before sleeping (adaptive) */
	int error_logged;
	int abandon_logged;
};

#pragma GCC visibility push(hidden)

/* What the engine hands Java, FioJob.open and Probe alike: key=value strings (io.nvmeof.fio.JobSettings). */
struct settings {
	char **v;
	int n;
};

/* The job's settings, one namespace= per fio file; queue_depth 0 leaves the queue depth out (the probe's case). */
int nvmeof_job_settings(struct thread_data *td, struct nvmeof_job *j, unsigned int queue_depth, struct settings *s);
void nvmeof_free_settings(struct settings *s);

/* Runs io.nvmeof.fio.Probe in a child process (no JVM in fio's parent, which forks the jobs later): each file's size. */
int nvmeof_probe(struct thread_data *td, struct nvmeof_job *j);

/* libjvm.so and the class path for the job's options; 0, or 1 with fio's error logged saying what to set. */
int nvmeof_java_paths(struct nvmeof_options *o, char *libjvm, size_t libjvm_len, char *cp, size_t cp_len);

/* The java launcher next to libjvm.so (lib/server/libjvm.so -> bin/java). */
void nvmeof_java_launcher(const char *libjvm, char *out, size_t len);

/* options.c: fio's table of the engine's options, and their check at setup (defaults filled in); 0, or 1 logged. */
extern struct fio_option engine_options[];
int check_options(struct nvmeof_options *o);

/* jvm.c: the JVM (started by the first job's init) and the io.nvmeof.fio.FioJob methods the engine calls. */
extern JavaVM *jvm;
extern jclass job_class;
extern jmethodID m_open, m_memory, m_submit, m_close, m_describe, m_abandon;

/* Starts the JVM (once per process) or attaches this thread; returns the thread's env or NULL (logged). */
JNIEnv *java_env(struct thread_data *td, int *attached);

/* The exception pending in env, as text (and cleared). */
void exception_text(JNIEnv *env, char *out, size_t len);

/* The job's settings as a Java String[] (a local reference), or NULL. */
jobjectArray java_settings(JNIEnv *env, struct settings *s);

/* This thread's env, NULL where it is not attached (or before the JVM). Inline: commit calls it for every batch. */
static inline JNIEnv *current_env(void)
{
	JNIEnv *env = NULL;

	if (jvm && (*jvm)->GetEnv(jvm, (void **) &env, JNI_VERSION_10) == JNI_OK)
		return env;
	return NULL;
}

/* io_path.c: the ring shared with Java, allocated and tuned by init, and the I/O hooks of the hook table. */
int ring_alloc(struct thread_data *td, struct nvmeof_job *j, unsigned int depth);
void ring_tune(struct nvmeof_job *j);
enum fio_q_status nvmeof_queue(struct thread_data *td, struct io_u *io_u);
int nvmeof_commit(struct thread_data *td);
int nvmeof_getevents(struct thread_data *td, unsigned int min, unsigned int max, const struct timespec *t);
struct io_u *nvmeof_event(struct thread_data *td, int event);

#pragma GCC visibility pop

#endif
