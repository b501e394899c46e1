/*
 * fio's filename= in SPDK's fio plugin syntax: one namespace of one subsystem per fio file,
 *   filename=trtype=tcp adrfam=IPv4 traddr=10.0.0.5 trsvcid=4420 subnqn=nqn.2016-06.io.spdk\:cnode1 ns=1
 * (fio splits filenames at ':' and turns '\:' into ':').
 */
#ifndef NVMEOF_SPDK_FILENAME_H
#define NVMEOF_SPDK_FILENAME_H

#include <stddef.h>

#define TARGET_TRTYPE_MAX 8
#define TARGET_TRADDR_MAX 256	/* SPDK's SPDK_NVMF_TRADDR_MAX_LEN */
#define TARGET_TRSVCID_MAX 32	/* SPDK's SPDK_NVMF_TRSVCID_MAX_LEN */
#define TARGET_NQN_MAX 224	/* NVMe: 223 bytes and a NUL */

/* Where one fio file's I/O goes: a namespace of a subsystem. Empty strings and nsid 0 are "not said". */
struct nvmeof_target {
	char trtype[TARGET_TRTYPE_MAX];
	char traddr[TARGET_TRADDR_MAX];
	char trsvcid[TARGET_TRSVCID_MAX];
	char subnqn[TARGET_NQN_MAX];
	unsigned int nsid;
};

enum {
	FILENAME_OK = 0,
	FILENAME_BAD = -1,	 /* a key or value the engine cannot honour */
	FILENAME_NOT_KEY_VALUE = -2, /* a word that is not key=value: most often an NQN split at an unescaped ':' */
};

/* Reads an SPDK filename into t (keys it does not name stay empty); on failure, err says why. */
int spdk_filename_parse(const char *name, struct nvmeof_target *t, char *err, size_t errlen);

/*
 * Completes t, parsed from a filename, with the job's engine options: a key the filename leaves out takes the job's
 * option (set: what the job set itself; resolved: with the engine's defaults); a key it names must agree with the job's
 * option. traddr, subnqn and ns have no default here: SPDK's plugin would read their absence as a PCIe device, every
 * subsystem of a discovery service, or the first active namespace. On failure, err says why.
 */
int spdk_filename_complete(struct nvmeof_target *t, const struct nvmeof_target *set,
			   const struct nvmeof_target *resolved, char *err, size_t errlen);

#endif
