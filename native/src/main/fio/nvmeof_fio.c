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
 * This file holds the other hooks (setup, init, cleanup, I/O memory, files) and the one exported symbol, the hook
 * table. The options are in options.c, the JVM and the FioJob calls in jvm.c, queue/commit/getevents/event and the ring shared with Java in
 * io_path.c, the settings and the probe in probe.c, where the JVM and the jar are in java_paths.c, the reading of
 * filename= in spdk_filename.c. Built by native/src/main/fio/build.sh against the headers of the fio that is
 * installed (Debian's source package).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <jni.h>

#include "fio.h"
#include "nvmeof_fio.h"

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

static int nvmeof_init(struct thread_data *td)
{
	struct nvmeof_job *j = td->io_ops_data;
	unsigned int depth = td->o.iodepth ? td->o.iodepth : 1;
	struct settings s;
	JNIEnv *env;
	jobject local = NULL;

	if (!j) {
		log_err("nvmeof: init before setup\n");
		return 1;
	}
	if (check_block_sizes(td, j))
		return 1;
	if (ring_alloc(td, j, depth))
		return 1;
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
	ring_tune(j);
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
	.options = engine_options,
};
