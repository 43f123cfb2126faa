/* Per-packet trace of an emulated link (see pkttrace.h). */
#include "pkttrace.h"
#include "tun.h"

#include <netinet/in.h>

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

int pkttrace_open(struct pkttrace *t, const char *path, uint64_t max_records)
{
	t->left = max_records;
	t->f = fopen(path, "w");
	if (!t->f)
		return -1;
	/* Written in large blocks: the trace must not slow the packets it records. */
	setvbuf(t->f, NULL, _IOFBF, 1 << 20);
	return 0;
}

void pkttrace_record(struct pkttrace *t, const char *dir, const uint8_t *buf, size_t len, uint64_t now_ns)
{
	if (!t->f || t->left == 0 || len < (size_t)VNET_HDR_LEN + 40)
		return;
	const uint8_t *ip = buf + VNET_HDR_LEN;
	size_t iplen = len - VNET_HDR_LEN;
	size_t hdr;
	int version = ip[0] >> 4;
	if (version == 4) {
		hdr = (ip[0] & 0x0f) * 4u;
		if (ip[9] != IPPROTO_TCP || hdr < 20)
			return;
	} else if (version == 6) {
		hdr = 40; /* the platform's hosts send no extension headers */
		if (ip[6] != IPPROTO_TCP)
			return;
	} else {
		return;
	}
	if (iplen < hdr + 20)
		return;
	const uint8_t *tcp = ip + hdr;
	size_t doff = (tcp[12] >> 4) * 4u;
	if (doff < 20 || iplen < hdr + doff)
		return;
	/* The buffer's length, not the IP length field: a GSO super-packet's
	 * payload is all of its segments'. */
	size_t payload = iplen - hdr - doff;
	/* The payload's first four bytes say which request it is (XRootD: a stream id and a request code;
	 * HTTP: the method's first letters; TLS: the record type and version). */
	const uint8_t *p = tcp + doff;
	char head[9] = "-";
	if (payload >= 4)
		snprintf(head, sizeof(head), "%02x%02x%02x%02x", p[0], p[1], p[2], p[3]);
	fprintf(t->f, "%llu %s v%d %u %u %u %zu %s\n", (unsigned long long)now_ns, dir, version,
		(unsigned)rd16(tcp), (unsigned)rd16(tcp + 2), (unsigned)tcp[13], payload, head);
	t->left--;
}

void pkttrace_flush(struct pkttrace *t)
{
	if (t->f)
		fflush(t->f);
}

void pkttrace_close(struct pkttrace *t)
{
	if (t->f)
		fclose(t->f);
	t->f = NULL;
}
