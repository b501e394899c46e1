/*
 * The engine's options: fio's option table (what a job file may set, with its help text and defaults) and their
 * check at setup, where an option the job leaves unset takes its $NVMEOF_... variable, else ./nvmeof target's default.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"
#include "nvmeof_fio.h"

struct fio_option engine_options[] = {
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

int check_options(struct nvmeof_options *o)
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
