/*
 * The settings the engine hands Java (io.nvmeof.fio.JobSettings), and the probe: io.nvmeof.fio.Probe run in a child
 * process at setup for each namespace's size, block size and largest transfer.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nvmeof_fio.h"

static void digests(struct nvmeof_options *o, int *hdgst, int *ddgst)
{
	*hdgst = o->hdr_digest;
	*ddgst = o->data_digest;
	if (o->digest_enable) {
		if (!strcasecmp(o->digest_enable, "HEADER") || !strcasecmp(o->digest_enable, "BOTH"))
			*hdgst = 1;
		if (!strcasecmp(o->digest_enable, "DATA") || !strcasecmp(o->digest_enable, "BOTH"))
			*ddgst = 1;
	}
}

void nvmeof_free_settings(struct settings *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static int add_setting(struct settings *s, const char *fmt, ...)
{
	char **grown = realloc(s->v, (s->n + 1) * sizeof(char *));
	va_list ap;
	int rc;

	if (!grown)
		return -1;
	s->v = grown;
	va_start(ap, fmt);
	rc = vasprintf(&s->v[s->n], fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -1;
	s->n++;
	return 0;
}

int nvmeof_job_settings(struct thread_data *td, struct nvmeof_job *j, unsigned int queue_depth, struct settings *s)
{
	struct nvmeof_options *o = td->eo;
	int hdgst, ddgst, rc = 0;

	digests(o, &hdgst, &ddgst);
	memset(s, 0, sizeof(*s));
	if (o->hostnqn && o->hostnqn[0])
		rc |= add_setting(s, "hostnqn=%s", o->hostnqn);
	if (queue_depth)
		rc |= add_setting(s, "queue_depth=%u", queue_depth);
	rc |= add_setting(s, "io_queues=%u", o->io_queues);
	rc |= add_setting(s, "hdgst=%d", hdgst);
	rc |= add_setting(s, "ddgst=%d", ddgst);
	rc |= add_setting(s, "busy_poll_us=%u", o->busy_poll_us);
	rc |= add_setting(s, "ctrl_loss_tmo=%d", o->ctrl_loss_s);
	rc |= add_setting(s, "fast_io_fail_tmo=%d", o->fast_io_fail_s);
	rc |= add_setting(s, "reconnect_delay=%d", o->reconnect_delay_s);
	for (unsigned int i = 0; i < j->nfiles; i++) {
		struct nvmeof_target *t = &j->files[i].target;

		rc |= add_setting(s, "namespace=%s\t%s\t%s\t%s\t%u", t->trtype, t->traddr, t->trsvcid, t->subnqn, t->nsid);
	}
	if (rc) {
		nvmeof_free_settings(s);
		td_verror(td, ENOMEM, "settings");
		return 1;
	}
	return 0;
}

/* All a pipe gives until its end, NUL-terminated, without a trailing newline (what does not fit is dropped). */
static void read_all(int fd, char *buf, size_t size)
{
	char sink[4096];
	size_t n = 0;

	for (;;) {
		int room = n + 1 < size;
		ssize_t r = read(fd, room ? buf + n : sink, room ? size - 1 - n : sizeof(sink));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (room)
			n += (size_t) r;
	}
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
}

int nvmeof_probe(struct thread_data *td, struct nvmeof_job *j)
{
	static const char *const jvm_args[] = { "-Xrs", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error" };
	const int fixed = sizeof(jvm_args) / sizeof(jvm_args[0]);
	struct nvmeof_options *o = td->eo;
	char libjvm[PATH_MAX], java[PATH_MAX], cp[PATH_MAX], err[1024];
	size_t out_size = (size_t) j->nfiles * 96 + 64;
	char *out = NULL, *line;
	const char **argv = NULL;
	struct settings s;
	int po[2], pe[2], status, a = 0, rc = 1;
	pid_t pid;

	if (nvmeof_java_paths(o, libjvm, sizeof(libjvm), cp, sizeof(cp)))
		return 1;
	nvmeof_java_launcher(libjvm, java, sizeof(java));
	if (nvmeof_job_settings(td, j, 0, &s))
		return 1;
	out = malloc(out_size);
	argv = calloc(fixed + 5 + s.n, sizeof(char *));
	if (!out || !argv) {
		td_verror(td, ENOMEM, "probe");
		goto out;
	}
	argv[a++] = java;
	for (int i = 0; i < fixed; i++)
		argv[a++] = jvm_args[i];
	argv[a++] = "-cp";
	argv[a++] = cp;
	argv[a++] = "io.nvmeof.fio.Probe";
	for (int i = 0; i < s.n; i++)
		argv[a++] = s.v[i];
	if (pipe(po) || pipe(pe)) {
		td_verror(td, errno, "pipe");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		td_verror(td, errno, "fork");
		goto out;
	}
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		execv(java, (char *const *) argv);
		fprintf(stderr, "cannot run %s: %s\n", java, strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	/* The probe says little on stderr (one line, or a JVM warning): stdout can be read to its end first. */
	read_all(po[0], out, out_size);
	read_all(pe[0], err, sizeof(err));
	close(po[0]);
	close(pe[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_err("nvmeof: %s\n", err[0] ? err : "the probe (io.nvmeof.fio.Probe) failed and said nothing");
		goto out;
	}
	line = out;
	for (unsigned int i = 0; i < j->nfiles; i++) {
		struct nvmeof_file *f = &j->files[i];

		if (!line || sscanf(line, "size=%llu block=%d maxio=%llu", &f->size, &f->block_size, &f->max_io) != 3
		    || f->block_size <= 0) {
			log_err("nvmeof: the probe's answer for file %u is not size=B block=B maxio=B: '%s'\n", i, out);
			goto out;
		}
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	rc = 0;
out:
	nvmeof_free_settings(&s);
	free(argv);
	free(out);
	return rc;
}
