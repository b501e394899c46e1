/* fio's filename= in SPDK's fio plugin syntax: see spdk_filename.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "spdk_filename.h"

enum key { K_TRTYPE, K_ADRFAM, K_TRADDR, K_TRSVCID, K_SUBNQN, K_NS, K_COUNT };

/* SPDK's names; like spdk_nvme_transport_id_parse, keys are matched in any case. */
static const char *const key_names[K_COUNT] = { "trtype", "adrfam", "traddr", "trsvcid", "subnqn", "ns" };

static int port_number(const char *s)
{
	char *end;
	long port = strtol(s, &end, 10);

	return *s && !*end && port >= 1 && port <= 65535 ? (int) port : 0;
}

static int copy_value(char *dst, size_t size, const char *key, const char *value, char *err, size_t errlen)
{
	if (strlen(value) >= size) {
		snprintf(err, errlen, "has %s= longer than %zu bytes", key, size - 1);
		return FILENAME_BAD;
	}
	snprintf(dst, size, "%s", value);
	return FILENAME_OK;
}

static int set_key(struct nvmeof_target *t, enum key k, const char *value, char *err, size_t errlen)
{
	char *end;
	unsigned long ns;

	switch (k) {
	case K_TRTYPE:
		if (strcasecmp(value, "tcp") && strcasecmp(value, "rdma")) {
			snprintf(err, errlen, "has trtype=%s: this engine speaks tcp (NVMe/TCP) and rdma (NVMe/RDMA)", value);
			return FILENAME_BAD;
		}
		snprintf(t->trtype, sizeof(t->trtype), "%s", strcasecmp(value, "tcp") ? "rdma" : "tcp");
		return FILENAME_OK;
	case K_ADRFAM:
		/* The address itself says which; the key is checked so that IB or FC is refused, not ignored. */
		if (strcasecmp(value, "IPv4") && strcasecmp(value, "IPv6")) {
			snprintf(err, errlen, "has adrfam=%s: this engine speaks IPv4 and IPv6", value);
			return FILENAME_BAD;
		}
		return FILENAME_OK;
	case K_TRADDR:
		return copy_value(t->traddr, sizeof(t->traddr), "traddr", value, err, errlen);
	case K_TRSVCID:
		if (!port_number(value)) {
			snprintf(err, errlen, "has trsvcid=%s, not a port number (1-65535)", value);
			return FILENAME_BAD;
		}
		return copy_value(t->trsvcid, sizeof(t->trsvcid), "trsvcid", value, err, errlen);
	case K_SUBNQN:
		return copy_value(t->subnqn, sizeof(t->subnqn), "subnqn", value, err, errlen);
	case K_NS:
		ns = strtoul(value, &end, 10);
		if (*end || value[0] == '-' || ns < 1 || ns > 0xFFFFFFFEUL) {
			snprintf(err, errlen, "has ns=%s, not a namespace ID (1-4294967294)", value);
			return FILENAME_BAD;
		}
		t->nsid = (unsigned int) ns;
		return FILENAME_OK;
	default:
		return FILENAME_BAD;
	}
}

int spdk_filename_parse(const char *name, struct nvmeof_target *t, char *err, size_t errlen)
{
	char copy[1024], *save = NULL, *word;
	unsigned int seen = 0;

	memset(t, 0, sizeof(*t));
	if (strlen(name) >= sizeof(copy)) {
		snprintf(err, errlen, "is longer than %zu bytes", sizeof(copy) - 1);
		return FILENAME_BAD;
	}
	snprintf(copy, sizeof(copy), "%s", name);
	for (word = strtok_r(copy, " \t\r\n", &save); word; word = strtok_r(NULL, " \t\r\n", &save)) {
		/* SPDK separates a key from its value with '=' or ':'. */
		size_t klen = strcspn(word, "=:");
		const char *value = word + klen + 1;
		int k, rc;

		if (!klen || !word[klen]) {
			snprintf(err, errlen, "has '%s', which is not key=value; fio splits filenames at ':', so write each ':' of an NQN"
				 " or an IPv6 address as '\\:' (SPDK's syntax: trtype=tcp traddr=ADDR trsvcid=PORT subnqn=NQN"
				 " ns=NSID)", word);
			return FILENAME_NOT_KEY_VALUE;
		}
		word[klen] = 0;
		for (k = 0; k < K_COUNT && strcasecmp(word, key_names[k]); k++)
			;
		if (k == K_COUNT) {
			snprintf(err, errlen, "has key '%s', not one this engine honours (trtype, adrfam, traddr, trsvcid, subnqn,"
				 " ns; hostnqn, digests and the rest are engine options)", word);
			return FILENAME_BAD;
		}
		if (seen & (1u << k)) {
			snprintf(err, errlen, "names %s twice", key_names[k]);
			return FILENAME_BAD;
		}
		seen |= 1u << k;
		if (!*value) {
			snprintf(err, errlen, "has %s= with no value", key_names[k]);
			return FILENAME_BAD;
		}
		rc = set_key(t, (enum key) k, value, err, errlen);
		if (rc)
			return rc;
	}
	if (!seen) {
		snprintf(err, errlen, "is empty");
		return FILENAME_BAD;
	}
	return FILENAME_OK;
}

/* A key the filename names must agree with the job's option of the same meaning, when the job sets one. */
static int agrees(const char *key, const char *named, const char *option, const char *set, int numeric, char *err,
		  size_t errlen)
{
	int same;

	if (!named[0] || !set[0])
		return 1;
	same = numeric ? strtol(named, NULL, 10) == strtol(set, NULL, 10) : !strcmp(named, set);
	if (!same)
		snprintf(err, errlen, "says %s=%s but the job sets %s=%s: drop one, or make them agree", key, named, option,
			 set);
	return same;
}

/* A key the filename leaves out: the job's option when there is one (fallback), else refused with why. */
static int fill(char *dst, size_t size, const char *fallback, const char *why, char *err, size_t errlen)
{
	if (dst[0])
		return FILENAME_OK;
	if (!fallback[0]) {
		snprintf(err, errlen, "%s", why);
		return FILENAME_BAD;
	}
	snprintf(dst, size, "%s", fallback);
	return FILENAME_OK;
}

int spdk_filename_complete(struct nvmeof_target *t, const struct nvmeof_target *set,
			   const struct nvmeof_target *resolved, char *err, size_t errlen)
{
	char named_ns[16] = "", set_ns[16] = "";

	if (t->nsid)
		snprintf(named_ns, sizeof(named_ns), "%u", t->nsid);
	if (set->nsid)
		snprintf(set_ns, sizeof(set_ns), "%u", set->nsid);
	if (!agrees("trtype", t->trtype, "trtype", set->trtype, 0, err, errlen)
	    || !agrees("traddr", t->traddr, "traddr", set->traddr, 0, err, errlen)
	    || !agrees("trsvcid", t->trsvcid, "trsvcid", set->trsvcid, 1, err, errlen)
	    || !agrees("subnqn", t->subnqn, "subnqn", set->subnqn, 0, err, errlen)
	    || !agrees("ns", named_ns, "nsid", set_ns, 1, err, errlen))
		return FILENAME_BAD;
	if (fill(t->trtype, sizeof(t->trtype), resolved->trtype, "", err, errlen)
	    || fill(t->trsvcid, sizeof(t->trsvcid), resolved->trsvcid, "", err, errlen)
	    || fill(t->traddr, sizeof(t->traddr), set->traddr, "has no traddr= (the target's address)", err, errlen)
	    || fill(t->subnqn, sizeof(t->subnqn), set->subnqn, "has no subnqn= (SPDK's plugin would then attach every"
		    " subsystem the discovery service lists; this engine needs the subsystem named)", err, errlen))
		return FILENAME_BAD;
	if (!t->nsid && !set->nsid) {
		snprintf(err, errlen, "has no ns= (the namespace ID: SPDK's plugin would take the first active one; this"
			 " engine does not guess)");
		return FILENAME_BAD;
	}
	if (!t->nsid)
		t->nsid = set->nsid;
	return FILENAME_OK;
}
