/*
 * nvmeof-fio: an external fio ioengine (ioengine=external:/path/to/nvmeof-fio.so) that drives the nvmeof-java
 * initiator. It starts a JVM in fio's process through the JNI invocation API (as fio's own libhdfs engine does), and
 * maps the engine hooks onto io.nvmeof.fio.FioJob:
 *
 *   setup       reads fio's filename= in SPDK's syntax (spdk_filename.c: one namespace per fio file), or takes the
 *               engine's options for a job with no filename; asks io.nvmeof.fio.Probe, in a child process, for each
 *               namespace's size (fio forks its jobs after setup in process mode, and a JVM does not survive fork)
 *   init        starts the JVM once per process (or attaches this thread), and opens a FioJob: one controller per
 *               distinct target
 *   iomem_alloc allocates fio's I/O buffers here and hands them to Java once, to register with the controller
 *   queue       appends a submission to memory shared with Java
 *   commit      one JNI call for the whole batch
 *   getevents   reads completions from the shared ring with no JNI call, spinning briefly then sleeping on a futex
 *               that the Java completion wakes (a JNI call only when this thread sleeps); while fio is stopping
 *               (runtime over, a signal, an error), it has the job fail the I/O held for a target that is gone
 *   cleanup     closes the FioJob, detaches the thread
 *
 * The settings and the probe are in probe.c, where the JVM and the jar are in java_paths.c, the reading of filename=
 * in spdk_filename.c. Built by native/src/main/fio/build.sh against the headers of the fio that is installed (Debian's
 * source package).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/futex.h>
#include <jni.h>

#include "fio.h"
#include "optgroup.h"
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

static struct fio_option options[] = {
	{ .name = "trtype", .lname = "NVMe-oF transport", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, trtype),
	  .help = "Transport: tcp or rdma (default: $NVMEOF_TRTYPE, else tcp)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "traddr", .lname = "NVMe-oF target address", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, traddr),
	  .help = "Target address (default: $NVMEOF_TRADDR, else 127.0.0.1)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "trsvcid", .lname = "NVMe-oF target port", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, trsvcid),
	  .help = "Target port (default: $NVMEOF_TRSVCID, else 4420)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "subnqn", .lname = "Subsystem NQN", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, subnqn),
	  .help = "Subsystem NQN (default: $NVMEOF_SUBNQN, else ./nvmeof target's nqn.2026-11.io.nvmeof:default)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "nsid", .lname = "Namespace ID", .type = FIO_OPT_INT,
	  .off1 = offsetof(struct nvmeof_options, nsid), .minval = 1,
	  .help = "Namespace ID (default: $NVMEOF_NSID, else 1)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "hostnqn", .lname = "Host NQN", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, hostnqn),
	  .help = "Host NQN (default: derived from a host ID)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "io_queues", .lname = "I/O queues", .type = FIO_OPT_INT,
	  .off1 = offsetof(struct nvmeof_options, io_queues), .def = "1", .minval = 1, .maxval = 64,
	  .help = "I/O queues (connections) per job", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "busy_poll_us", .lname = "Busy-poll time", .type = FIO_OPT_INT,
	  .off1 = offsetof(struct nvmeof_options, busy_poll_us), .def = "0", .minval = 0, .maxval = 1000000,
	  .help = "NVMe/TCP: microseconds the initiator's event loop keeps polling after its last work (0: block)",
	  .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	/*
	 * On a lost connection the kernel host holds I/O and reconnects every 10 s for 600 s. A benchmark wants to ride
	 * through a target restart but to fail, and end with its report, soon after a target that stays down: so a
	 * reconnect every second for 10 s, I/O held meanwhile. Whatever they are, fio's runtime and Ctrl-C still end
	 * the job (getevents).
	 */
	{ .name = "ctrl_loss_tmo", .lname = "Controller loss timeout", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, ctrl_loss_tmo), .def = "10",
	  .help = "Seconds to keep reconnecting after the connection is lost, I/O held, before it fails (-1: forever,"
		  " 0: fail at once; nvme connect --ctrl-loss-tmo)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "fast_io_fail_tmo", .lname = "Fast I/O fail timeout", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, fast_io_fail_tmo), .def = "-1",
	  .help = "Seconds I/O is held while reconnecting before it fails, reconnecting going on (-1: until"
		  " ctrl_loss_tmo; nvme connect --fast_io_fail_tmo)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "reconnect_delay", .lname = "Reconnect delay", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, reconnect_delay), .def = "1",
	  .help = "Seconds between reconnect attempts (nvme connect --reconnect-delay)", .category = FIO_OPT_C_ENGINE,
	  .group = FIO_OPT_G_INVALID },
	{ .name = "hdr_digest", .lname = "Header digest", .type = FIO_OPT_BOOL,
	  .off1 = offsetof(struct nvmeof_options, hdr_digest), .def = "0",
	  .help = "NVMe/TCP header digest", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "data_digest", .lname = "Data digest", .type = FIO_OPT_BOOL,
	  .off1 = offsetof(struct nvmeof_options, data_digest), .def = "0",
	  .help = "NVMe/TCP data digest", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "digest_enable", .lname = "Digests (SPDK's name)", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, digest_enable),
	  .help = "HEADER, DATA or BOTH, as SPDK's fio plugin", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "java_classpath", .lname = "Class path", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, java_classpath),
	  .help = "The nvmeof jar (default: $NVMEOF_FIO_CLASSPATH, else found next to this engine)",
	  .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "java_opts", .lname = "JVM options", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, java_opts),
	  .help = "Extra JVM options, space-separated (default: $NVMEOF_FIO_JAVA_OPTS)",
	  .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = "jvm", .lname = "libjvm.so", .type = FIO_OPT_STR_STORE,
	  .off1 = offsetof(struct nvmeof_options, jvm),
	  .help = "Path of libjvm.so (default: $NVMEOF_FIO_JVM, $JAVA_HOME, the java on PATH, the build's JDK)",
	  .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID },
	{ .name = NULL },
};

/* ------------------------------------------------------------------------------------------------ the JVM */

static pthread_mutex_t jvm_lock = PTHREAD_MUTEX_INITIALIZER;
static JavaVM *jvm;
static jclass job_class;
static jclass string_class;
static jmethodID m_open, m_memory, m_submit, m_close, m_describe, m_abandon;

static void JNICALL native_wake(JNIEnv *env, jclass cls, jlong address)
{
	unsigned int *word = (unsigned int *) (uintptr_t) address;

	__atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The exception pending in env, as text (and cleared). */
static void exception_text(JNIEnv *env, char *out, size_t len)
{
	jthrowable t = (*env)->ExceptionOccurred(env);

	snprintf(out, len, "a Java exception");
	if (!t)
		return;
	(*env)->ExceptionClear(env);
	jclass throwable = (*env)->FindClass(env, "java/lang/Throwable");
	jmethodID to_string = (*env)->GetMethodID(env, throwable, "getMessage", "()Ljava/lang/String;");
	jstring s = (jstring) (*env)->CallObjectMethod(env, t, to_string);

	if ((*env)->ExceptionCheck(env) || !s) {
		(*env)->ExceptionClear(env);
		to_string = (*env)->GetMethodID(env, throwable, "toString", "()Ljava/lang/String;");
		s = (jstring) (*env)->CallObjectMethod(env, t, to_string);
		(*env)->ExceptionClear(env);
	}
	if (s) {
		const char *c = (*env)->GetStringUTFChars(env, s, NULL);

		snprintf(out, len, "%s", c);
		(*env)->ReleaseStringUTFChars(env, s, c);
	}
}

/* Starts the JVM (once per process) or attaches this thread; returns the thread's env or NULL (logged). */
static JNIEnv *java_env(struct thread_data *td, int *attached)
{
	struct nvmeof_options *o = td->eo;
	JNIEnv *env = NULL;

	*attached = 0;
	pthread_mutex_lock(&jvm_lock);
	if (!jvm) {
		char libjvm[PATH_MAX], cp[PATH_MAX], cp_opt[PATH_MAX + 32];
		JavaVMOption opts[32];
		JavaVMInitArgs args;
		int n = 0;
		char *extra = NULL;
		void *h;
		jint (*create)(JavaVM **, void **, void *);

		if (nvmeof_java_paths(o, libjvm, sizeof(libjvm), cp, sizeof(cp))) {
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		h = dlopen(libjvm, RTLD_NOW | RTLD_GLOBAL);
		if (!h) {
			log_err("nvmeof: cannot start a JVM: %s\n", dlerror());
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		create = (jint (*)(JavaVM **, void **, void *)) dlsym(h, "JNI_CreateJavaVM");
		if (!create) {
			log_err("nvmeof: cannot start a JVM: %s has no JNI_CreateJavaVM\n", libjvm);
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		snprintf(cp_opt, sizeof(cp_opt), "-Djava.class.path=%s", cp);
		opts[n++].optionString = cp_opt;
		/* -Xrs: fio keeps SIGINT and SIGTERM (Ctrl-C ends the run as usual). */
		opts[n++].optionString = "-Xrs";
		opts[n++].optionString = "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED";
		opts[n++].optionString = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn";
		opts[n++].optionString = "-Dorg.slf4j.simpleLogger.logFile=System.err";
		{
			const char *more = o->java_opts && o->java_opts[0] ? o->java_opts : getenv("NVMEOF_FIO_JAVA_OPTS");
			char *save = NULL, *t;

			if (more && more[0]) {
				extra = strdup(more);
				for (t = strtok_r(extra, " ", &save); t && n < 31; t = strtok_r(NULL, " ", &save))
					opts[n++].optionString = t;
			}
		}
		memset(&args, 0, sizeof(args));
		args.version = JNI_VERSION_10;
		args.nOptions = n;
		args.options = opts;
		args.ignoreUnrecognized = JNI_FALSE;
		if (create(&jvm, (void **) &env, &args) != JNI_OK) {
			log_err("nvmeof: cannot start a JVM from %s (check java_opts)\n", libjvm);
			jvm = NULL;
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		/* extra's strings were copied by the JVM */
		free(extra);
		jclass local = (*env)->FindClass(env, "io/nvmeof/fio/FioJob");
		if (!local) {
			char msg[512];

			exception_text(env, msg, sizeof(msg));
			log_err("nvmeof: io.nvmeof.fio.FioJob is not in %s (%s); build the project or set java_classpath\n", cp,
				msg);
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		job_class = (jclass) (*env)->NewGlobalRef(env, local);
		JNINativeMethod wake = { "wake", "(J)V", (void *) native_wake };
		if ((*env)->RegisterNatives(env, job_class, &wake, 1) != 0) {
			log_err("nvmeof: cannot register FioJob.wake\n");
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		m_open = (*env)->GetStaticMethodID(env, job_class, "open",
			"([Ljava/lang/String;Ljava/nio/ByteBuffer;I)Lio/nvmeof/fio/FioJob;");
		m_memory = (*env)->GetMethodID(env, job_class, "memory", "(Ljava/nio/ByteBuffer;)V");
		m_submit = (*env)->GetMethodID(env, job_class, "submit", "(I)V");
		m_close = (*env)->GetMethodID(env, job_class, "close", "()V");
		m_describe = (*env)->GetStaticMethodID(env, job_class, "describe", "(I)Ljava/lang/String;");
		m_abandon = (*env)->GetMethodID(env, job_class, "abandonUnreachable", "()Ljava/lang/String;");
		local = (*env)->FindClass(env, "java/lang/String");
		string_class = local ? (jclass) (*env)->NewGlobalRef(env, local) : NULL;
		if (!m_open || !m_memory || !m_submit || !m_close || !m_describe || !m_abandon || !string_class) {
			(*env)->ExceptionClear(env);
			log_err("nvmeof: io.nvmeof.fio.FioJob in %s does not match this engine; rebuild both\n", cp);
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		/* The creating thread is attached like the others, and detached at its job's cleanup. */
		*attached = 1;
		pthread_mutex_unlock(&jvm_lock);
		return env;
	}
	pthread_mutex_unlock(&jvm_lock);
	if ((*jvm)->GetEnv(jvm, (void **) &env, JNI_VERSION_10) == JNI_OK)
		return env;
	if ((*jvm)->AttachCurrentThreadAsDaemon(jvm, (void **) &env, NULL) != JNI_OK) {
		log_err("nvmeof: cannot attach thread to the JVM\n");
		return NULL;
	}
	*attached = 1;
	return env;
}

static JNIEnv *current_env(void)
{
	JNIEnv *env = NULL;

	if (jvm && (*jvm)->GetEnv(jvm, (void **) &env, JNI_VERSION_10) == JNI_OK)
		return env;
	return NULL;
}

/* ------------------------------------------------------------------------------------------------ setup */

/* An option the job does not set takes $NAME, else the default (./nvmeof target's). */
static void defaulted(char **opt, const char *env, const char *def)
{
	const char *e = getenv(env);

	if (*opt && (*opt)[0])
		return;
	free(*opt);
	*opt = strdup(e && e[0] ? e : def);
}

/* An option of whole seconds, from min up to a year (nvme-cli's connect takes the same, -1 meaning forever or off). */
static int seconds(const char *text, const char *name, const char *meaning, int min, int *out)
{
	char *end;
	long v = strtol(text ? text : "", &end, 10);

	if (!text || !text[0] || *end || v < min || v > 365L * 24 * 3600) {
		log_err("nvmeof: %s=%s is not a number of seconds (%s)\n", name, text ? text : "", meaning);
		return 1;
	}
	*out = (int) v;
	return 0;
}

static int check_options(struct nvmeof_options *o)
{
	char *end;
	long port;

	defaulted(&o->trtype, "NVMEOF_TRTYPE", "tcp");
	defaulted(&o->traddr, "NVMEOF_TRADDR", "127.0.0.1");
	defaulted(&o->trsvcid, "NVMEOF_TRSVCID", "4420");
	defaulted(&o->subnqn, "NVMEOF_SUBNQN", "nqn.2026-11.io.nvmeof:default");
	if (!o->nsid) {
		const char *e = getenv("NVMEOF_NSID");

		o->nsid = e && e[0] ? (unsigned int) strtoul(e, NULL, 10) : 1;
		if (!o->nsid) {
			log_err("nvmeof: NVMEOF_NSID=%s is not a namespace ID\n", e);
			return 1;
		}
	}
	if (!o->trtype || (strcmp(o->trtype, "tcp") && strcmp(o->trtype, "rdma"))) {
		log_err("nvmeof: trtype=%s is not tcp or rdma\n", o->trtype ? o->trtype : "");
		return 1;
	}
	port = strtol(o->trsvcid ? o->trsvcid : "", &end, 10);
	if (!o->trsvcid || *end || port < 1 || port > 65535) {
		log_err("nvmeof: trsvcid=%s is not a port number (1-65535)\n", o->trsvcid ? o->trsvcid : "");
		return 1;
	}
	if (seconds(o->ctrl_loss_tmo, "ctrl_loss_tmo", "-1 to reconnect forever, 0 never to", -1, &o->ctrl_loss_s)
	    || seconds(o->fast_io_fail_tmo, "fast_io_fail_tmo", "-1 to hold I/O until ctrl_loss_tmo", -1,
		       &o->fast_io_fail_s)
	    || seconds(o->reconnect_delay, "reconnect_delay", "at least 1", 1, &o->reconnect_delay_s))
		return 1;
	if (o->digest_enable && strcasecmp(o->digest_enable, "HEADER") && strcasecmp(o->digest_enable, "DATA")
	    && strcasecmp(o->digest_enable, "BOTH") && strcasecmp(o->digest_enable, "NONE")) {
		log_err("nvmeof: digest_enable=%s is not HEADER, DATA, BOTH or NONE\n", o->digest_enable);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------------ where the I/O goes */

/* The target the job's own options name, as the job set them: empty where it did not (before check_options). */
static void options_as_set(struct nvmeof_options *o, struct nvmeof_target *t)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->trtype, sizeof(t->trtype), "%s", o->trtype ? o->trtype : "");
	snprintf(t->traddr, sizeof(t->traddr), "%s", o->traddr ? o->traddr : "");
	snprintf(t->trsvcid, sizeof(t->trsvcid), "%s", o->trsvcid ? o->trsvcid : "");
	snprintf(t->subnqn, sizeof(t->subnqn), "%s", o->subnqn ? o->subnqn : "");
	t->nsid = o->nsid;
}

static int filename_error(struct fio_file *f, const char *why)
{
	log_err("nvmeof: filename '%s' %s\n", f->file_name, why);
	return 1;
}

/* One namespace per fio file, from fio's filename= in SPDK's syntax. */
static int targets_from_filenames(struct thread_data *td, struct nvmeof_job *j, const struct nvmeof_target *set)
{
	struct nvmeof_target resolved;
	struct fio_file *f;
	unsigned int i;
	char err[512];

	options_as_set(td->eo, &resolved);
	/* A word that is not key=value is most often an NQN cut at a ':' fio split at: said first, as it explains the rest. */
	for_each_file(td, f, i)
		if (spdk_filename_parse(f->file_name, &j->files[i].target, err, sizeof(err)) == FILENAME_NOT_KEY_VALUE)
			return filename_error(f, err);
	for_each_file(td, f, i)
		if (spdk_filename_parse(f->file_name, &j->files[i].target, err, sizeof(err))
		    || spdk_filename_complete(&j->files[i].target, set, &resolved, err, sizeof(err)))
			return filename_error(f, err);
	return 0;
}

/* A job with no filename=: fio named its files after the job; its one file is the namespace the options name. */
static int target_from_options(struct thread_data *td, struct nvmeof_job *j)
{
	if (!td->files_index) {
		/* Pretend to deal with one file, as engines/nbd.c does. */
		add_file(td, "nvmeof", 0, 0);
		td->o.nr_files = td->o.nr_files ? : 1;
		td->o.open_files++;
	}
	if (td->files_index > 1) {
		log_err("nvmeof: nrfiles=%u without filename=: each file would be the one namespace the engine's options"
			" name; give each its own filename=trtype=... traddr=... subnqn=... ns=...\n", td->files_index);
		return 1;
	}
	options_as_set(td->eo, &j->files[0].target);
	return 0;
}

static int nvmeof_setup(struct thread_data *td)
{
	struct nvmeof_options *o = td->eo;
	struct nvmeof_target set;
	struct nvmeof_job *j;
	struct fio_file *f;
	unsigned int i;

	if (!td->io_ops_data) {
		j = calloc(1, sizeof(*j));
		if (!j) {
			td_verror(td, ENOMEM, "calloc");
			return 1;
		}
		td->io_ops_data = j;
	}
	j = td->io_ops_data;
	/* fio calls setup again in the job when create_serialize=0: the files are known by then. */
	if (j->nfiles)
		return 0;
	options_as_set(o, &set);
	if (check_options(o))
		return 1;
	j->files = calloc(td->files_index ? td->files_index : 1, sizeof(*j->files));
	if (!j->files) {
		td_verror(td, ENOMEM, "calloc");
		return 1;
	}
	if (td->o.filename ? targets_from_filenames(td, j, &set) : target_from_options(td, j))
		return 1;
	j->nfiles = td->files_index;
	if (nvmeof_probe(td, j)) {
		j->nfiles = 0;
		return 1;
	}
	for_each_file(td, f, i)
		f->real_file_size = j->files[i].size;
	return 0;
}

/* ------------------------------------------------------------------------------------------------ init, cleanup */

static int check_block_sizes(struct thread_data *td, struct nvmeof_job *j)
{
	for (unsigned int i = 0; i < j->nfiles; i++) {
		int block = j->files[i].block_size;
		struct nvmeof_target *t = &j->files[i].target;

		for (int d = DDIR_READ; d <= DDIR_TRIM; d++) {
			if (td->o.min_bs[d] % block || td->o.max_bs[d] % block) {
				log_err("nvmeof: block sizes must be multiples of the namespace's %d-byte blocks (bs=%llu..%llu for"
					" %s; %s://%s:%s/%s nsid %u)\n", block, td->o.min_bs[d], td->o.max_bs[d],
					d == DDIR_READ ? "reads" : d == DDIR_WRITE ? "writes" : "trims", t->trtype, t->traddr,
					t->trsvcid, t->subnqn, t->nsid);
				return 1;
			}
		}
	}
	return 0;
}

/* The job's settings as a Java String[] (a local reference), or NULL. */
static jobjectArray java_settings(JNIEnv *env, struct settings *s)
{
	jobjectArray a = (*env)->NewObjectArray(env, s->n, string_class, NULL);

	for (int i = 0; a && i < s->n; i++) {
		jstring v = (*env)->NewStringUTF(env, s->v[i]);

		if (!v)
			return NULL;
		(*env)->SetObjectArrayElement(env, a, i, v);
		(*env)->DeleteLocalRef(env, v);
	}
	return a;
}

static int nvmeof_init(struct thread_data *td)
{
	struct nvmeof_job *j = td->io_ops_data;
	unsigned int depth = td->o.iodepth ? td->o.iodepth : 1;
	unsigned int ring = 1;
	struct settings s;
	JNIEnv *env;
	jobject local = NULL;

	if (!j) {
		log_err("nvmeof: init before setup\n");
		return 1;
	}
	if (check_block_sizes(td, j))
		return 1;
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
	env = java_env(td, &j->attached);
	if (!env)
		return 1;
	/* Queue depth: fio's iodepth, and room for I/O split at the transfer limit. */
	if (nvmeof_job_settings(td, j, depth + 1, &s))
		return 1;
	{
		jobjectArray settings = java_settings(env, &s);
		jobject shared = (*env)->NewDirectByteBuffer(env, j->shared, (jlong) j->shared_size);

		if (settings && shared)
			local = (*env)->CallStaticObjectMethod(env, job_class, m_open, settings, shared,
							       (jint) j->index_capacity);
		(*env)->DeleteLocalRef(env, settings);
		(*env)->DeleteLocalRef(env, shared);
	}
	nvmeof_free_settings(&s);
	if ((*env)->ExceptionCheck(env) || !local) {
		char msg[1024];

		exception_text(env, msg, sizeof(msg));
		log_err("nvmeof: %s\n", msg);
		return 1;
	}
	j->job = (*env)->NewGlobalRef(env, local);
	(*env)->DeleteLocalRef(env, local);
	td->io_ops->flags |= FIO_ASYNCIO_SETS_ISSUE_TIME;
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
	return 0;
}

static void nvmeof_cleanup(struct thread_data *td)
{
	struct nvmeof_job *j = td->io_ops_data;
	JNIEnv *env = current_env();

	if (!j)
		return;
	if (env && j->job) {
		(*env)->CallVoidMethod(env, j->job, m_close);
		(*env)->ExceptionClear(env);
		(*env)->DeleteGlobalRef(env, j->job);
		j->job = NULL;
	}
	if (env && j->attached)
		(*jvm)->DetachCurrentThread(jvm);
	free(j->queued_io);
	free(j->events);
	free(j->io_by_index);
	free(j->shared);
	free(j->files);
	free(j);
	td->io_ops_data = NULL;
}

/* ------------------------------------------------------------------------------------------------ memory */

static int nvmeof_iomem_alloc(struct thread_data *td, size_t total)
{
	struct nvmeof_job *j = td->io_ops_data;
	JNIEnv *env = current_env();
	jobject region;

	if (posix_memalign((void **) &td->orig_buffer, 4096, total)) {
		td_verror(td, ENOMEM, "posix_memalign");
		return 1;
	}
	if (!env || !j || !j->job) {
		log_err("nvmeof: I/O memory before the job was opened\n");
		return 1;
	}
	region = (*env)->NewDirectByteBuffer(env, td->orig_buffer, (jlong) total);
	(*env)->CallVoidMethod(env, j->job, m_memory, region);
	(*env)->DeleteLocalRef(env, region);
	if ((*env)->ExceptionCheck(env)) {
		char msg[512];

		exception_text(env, msg, sizeof(msg));
		log_err("nvmeof: registering fio's I/O memory: %s\n", msg);
		return 1;
	}
	return 0;
}

static void nvmeof_iomem_free(struct thread_data *td)
{
	free(td->orig_buffer);
	td->orig_buffer = NULL;
}

/* ------------------------------------------------------------------------------------------------ I/O */

static enum fio_q_status nvmeof_queue(struct thread_data *td, struct io_u *io_u)
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

static int nvmeof_commit(struct thread_data *td)
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

static int nvmeof_getevents(struct thread_data *td, unsigned int min, unsigned int max, const struct timespec *t)
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

static struct io_u *nvmeof_event(struct thread_data *td, int event)
{
	struct nvmeof_job *j = td->io_ops_data;

	return j->events[event];
}

static int nvmeof_open_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int nvmeof_close_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int nvmeof_get_file_size(struct thread_data *td, struct fio_file *f)
{
	struct nvmeof_job *j = td->io_ops_data;

	if (j && f->fileno >= 0 && (unsigned int) f->fileno < j->nfiles) {
		f->real_file_size = j->files[f->fileno].size;
		fio_file_set_size_known(f);
	}
	return 0;
}

/* The one symbol fio looks for; the rest of the engine is hidden (build.sh), so fio's own symbols never clash. */
__attribute__((visibility("default"))) struct ioengine_ops ioengine = {
	.name = "nvmeof",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_DISKLESSIO | FIO_NODISKUTIL | FIO_NOEXTEND | FIO_MEMALIGN,
	.setup = nvmeof_setup,
	.init = nvmeof_init,
	.queue = nvmeof_queue,
	.commit = nvmeof_commit,
	.getevents = nvmeof_getevents,
	.event = nvmeof_event,
	.cleanup = nvmeof_cleanup,
	.open_file = nvmeof_open_file,
	.close_file = nvmeof_close_file,
	.get_file_size = nvmeof_get_file_size,
	.iomem_alloc = nvmeof_iomem_alloc,
	.iomem_free = nvmeof_iomem_free,
	.option_struct_size = sizeof(struct nvmeof_options),
	.options = options,
};
