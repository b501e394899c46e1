/* Where the JVM (libjvm.so, the java launcher) and the initiator's jar are, for the engine's job and its probe. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvmeof_fio.h"

#ifndef NVMEOF_DEFAULT_LIBJVM
#define NVMEOF_DEFAULT_LIBJVM ""
#endif

/* Where this engine's .so lives, for the default class path. */
static void engine_dir(char *out, size_t len)
{
	Dl_info info;

	out[0] = 0;
	if (dladdr((void *) engine_dir, &info) && info.dli_fname) {
		char real[PATH_MAX];
		char *slash;

		if (!realpath(info.dli_fname, real))
			snprintf(real, sizeof(real), "%s", info.dli_fname);
		slash = strrchr(real, '/');
		if (slash)
			*slash = 0;
		snprintf(out, len, "%s", real);
	}
}

static int readable(const char *path)
{
	return path && path[0] && access(path, R_OK) == 0;
}

static void default_classpath(struct nvmeof_options *o, char *out, size_t len)
{
	char dir[PATH_MAX];
	const char *env = getenv("NVMEOF_FIO_CLASSPATH");

	if (o->java_classpath && o->java_classpath[0]) {
		snprintf(out, len, "%s", o->java_classpath);
		return;
	}
	if (env && env[0]) {
		snprintf(out, len, "%s", env);
		return;
	}
	engine_dir(dir, sizeof(dir));
	snprintf(out, len, "%s/nvmeof.jar", dir);
	if (readable(out))
		return;
	/* In the source tree: native/target/fio/nvmeof-fio.so and nvmeof-cli/target/nvmeof.jar. */
	snprintf(out, len, "%s/../../../nvmeof-cli/target/nvmeof.jar", dir);
}

/* libjvm.so: the option, $NVMEOF_FIO_JVM, $JAVA_HOME, the java on PATH, the JDK the engine was built with. */
static int find_libjvm(struct nvmeof_options *o, char *out, size_t len)
{
	const char *env = getenv("NVMEOF_FIO_JVM");
	const char *home = getenv("JAVA_HOME");
	const char *path = getenv("PATH");

	if (o->jvm && o->jvm[0]) {
		snprintf(out, len, "%s", o->jvm);
		return readable(out);
	}
	if (env && env[0]) {
		snprintf(out, len, "%s", env);
		return readable(out);
	}
	if (home && home[0]) {
		snprintf(out, len, "%s/lib/server/libjvm.so", home);
		if (readable(out))
			return 1;
	}
	if (path) {
		char *copy = strdup(path), *save = NULL, *d;

		for (d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			char java[PATH_MAX], real[PATH_MAX];

			snprintf(java, sizeof(java), "%s/java", d);
			if (access(java, X_OK) == 0 && realpath(java, real)) {
				char *slash = strrchr(real, '/');

				if (slash) {
					*slash = 0; /* .../bin */
					slash = strrchr(real, '/');
					if (slash) {
						*slash = 0;
						snprintf(out, len, "%s/lib/server/libjvm.so", real);
						if (readable(out)) {
							free(copy);
							return 1;
						}
					}
				}
			}
		}
		free(copy);
	}
	snprintf(out, len, "%s", NVMEOF_DEFAULT_LIBJVM);
	return readable(out);
}

void nvmeof_java_launcher(const char *libjvm, char *out, size_t len)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", libjvm);
	for (int i = 0; i < 3; i++) {
		slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
	}
	snprintf(out, len, "%s/bin/java", dir);
}

int nvmeof_java_paths(struct nvmeof_options *o, char *libjvm, size_t libjvm_len, char *cp, size_t cp_len)
{
	if (!find_libjvm(o, libjvm, libjvm_len)) {
		log_err("nvmeof: cannot start a JVM: no libjvm.so found (tried '%s'); set jvm=PATH, $NVMEOF_FIO_JVM or"
			" $JAVA_HOME (a Java 17 JDK or JRE)\n", libjvm);
		return 1;
	}
	default_classpath(o, cp, cp_len);
	if (!readable(cp) && !strchr(cp, ':')) {
		log_err("nvmeof: the initiator's jar '%s' is not there; build the project (mvn -DskipTests install) or set"
			" java_classpath=PATH\n", cp);
		return 1;
	}
	return 0;
}
