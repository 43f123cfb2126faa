/* wannet: a whole emulated network of long-haul links in one process.
 *
 * wanemu emulates one path between two TUN devices; wannet emulates a graph:
 * every directed link ("hop") has its own one-way delay, bottleneck rate,
 * drop-tail queue and Bernoulli loss (the same per-direction queue as
 * wanemu, dirq.c), and every ordered pair of sites has a route, a list of
 * hops.  All traffic between sites enters one TUN device in a router
 * namespace; wannet reads each packet, finds the route from its IPv4 source
 * and destination addresses, passes it through the route's hops one after
 * the other (flows that share a link share its queue and rate), and writes
 * it back into the TUN at the end, from where the kernel delivers it.
 *
 * Links can be cut and restored while it runs: on SIGHUP it reads the
 * control file, whose lines name the hops that are down ("down HOP") and the
 * delay credit taken off each packet's first hop ("credit NS": the fixed
 * cost of the namespaces, TUN and veth crossings, so RTTs match the
 * topology).  A down hop loses what it holds and everything offered to it.
 *
 * Config file (one item per line, '#' comments):
 *   hop NAME DELAY_US RATE_BPS QUEUE_BYTES LOSS
 *   site NAME A.B.C.D
 *   route SRC_SITE DST_SITE HOP [HOP ...]
 * Counters go to --stats as JSON every --stats-ms and on exit. */
#define _GNU_SOURCE
#include "dirq.h"
#include "evloop.h"
#include "tun.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_HOPS 512
#define MAX_SITES 128
#define MAX_ROUTE 31 /* hops per route; the position fits in 5 bits of a tag */
#define NAME_LEN 96
#define READ_SIZE (VNET_HDR_LEN + 65536 + 256)
#define TUN_BATCH 64

enum { TAG_TUN = 1u << 20, TAG_SIGNAL, TAG_STATS };

struct hop {
	char name[NAME_LEN];
	struct dirq q;
};

struct site {
	char name[NAME_LEN];
	uint32_t addr; /* network order */
};

struct route {
	uint8_t n;
	uint16_t hop[MAX_ROUTE];
};

static struct hop hops[MAX_HOPS];
static struct site sites[MAX_SITES];
static struct route *routes; /* [src * nsites + dst] */
static int nhops, nsites, tun_fd = -1;
static uint64_t credit_ns, generation;
static uint64_t tun_rx, noroute, delivered_pkts, delivered_bytes, deliver_err;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int find_hop(const char *name)
{
	for (int i = 0; i < nhops; i++)
		if (!strcmp(hops[i].name, name))
			return i;
	return -1;
}

static int find_site(const char *name)
{
	for (int i = 0; i < nsites; i++)
		if (!strcmp(sites[i].name, name))
			return i;
	return -1;
}

static int site_of(uint32_t addr)
{
	for (int i = 0; i < nsites; i++)
		if (sites[i].addr == addr)
			return i;
	return -1;
}

/* The packet leaves hop q: on to the next hop of its route, or delivered. */
static int forward(void *ctx, struct dirq *q, const struct pkt_desc *d, uint8_t *data, uint64_t now)
{
	(void)ctx;
	(void)q;
	const struct route *r = &routes[d->tag >> 5];
	unsigned next = (d->tag & 31u) + 1;
	if (next < r->n) {
		dirq_offer(&hops[r->hop[next]].q, data, d->len, d->tag + 1, 0, now);
		return 0;
	}
	if (write(tun_fd, data, d->len) != (ssize_t)d->len) {
		deliver_err++;
		return -1;
	}
	delivered_pkts++;
	delivered_bytes += d->wire;
	return 0;
}

static int parse_config(const char *path, uint64_t seed)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return -1;
	}
	char line[8192];
	int lineno = 0, ok = 0;
	struct {
		int src, dst, n;
		uint16_t hop[MAX_ROUTE];
	} *pending = calloc(MAX_SITES * MAX_SITES, sizeof(*pending));
	int npending = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		char *save = NULL, *kind = strtok_r(line, " \t\r\n", &save);
		if (!kind || kind[0] == '#')
			continue;
		if (!strcmp(kind, "hop")) {
			char *name = strtok_r(NULL, " \t\r\n", &save);
			char *delay = strtok_r(NULL, " \t\r\n", &save);
			char *rate = strtok_r(NULL, " \t\r\n", &save);
			char *queue = strtok_r(NULL, " \t\r\n", &save);
			char *loss = strtok_r(NULL, " \t\r\n", &save);
			if (!loss || nhops >= MAX_HOPS || strlen(name) >= NAME_LEN || find_hop(name) >= 0)
				goto bad;
			struct dirq_params p = {0};
			p.delay_ns = strtoull(delay, NULL, 10) * 1000ULL;
			p.rate_bps = strtod(rate, NULL);
			p.qlimit = strtoull(queue, NULL, 10);
			p.loss = strtod(loss, NULL);
			if (p.rate_bps < 0 || p.loss < 0 || p.loss > 1 || p.qlimit < 65536)
				goto bad;
			/* In flight on the link plus a full queue, with room for bursts. */
			double inflight =
				(p.rate_bps > 0 ? p.rate_bps : 2e9) / 8.0 * (double)p.delay_ns / 1e9;
			p.arena_bytes = (uint64_t)((inflight + (double)p.qlimit) * 1.5) + (4u << 20);
			struct hop *h = &hops[nhops];
			strcpy(h->name, name);
			if (dirq_init(&h->q, h->name, -1, &p, seed * 1000003ULL + (uint64_t)nhops * 2 + 1) <
			    0)
				goto bad;
			h->q.sink = forward;
			nhops++;
		} else if (!strcmp(kind, "site")) {
			char *name = strtok_r(NULL, " \t\r\n", &save);
			char *addr = strtok_r(NULL, " \t\r\n", &save);
			struct in_addr a;
			if (!addr || nsites >= MAX_SITES || strlen(name) >= NAME_LEN ||
			    find_site(name) >= 0 || inet_pton(AF_INET, addr, &a) != 1)
				goto bad;
			strcpy(sites[nsites].name, name);
			sites[nsites].addr = a.s_addr;
			nsites++;
		} else if (!strcmp(kind, "route")) {
			char *src = strtok_r(NULL, " \t\r\n", &save);
			char *dst = strtok_r(NULL, " \t\r\n", &save);
			if (!dst || npending >= MAX_SITES * MAX_SITES)
				goto bad;
			pending[npending].src = find_site(src);
			pending[npending].dst = find_site(dst);
			int n = 0;
			char *h;
			while ((h = strtok_r(NULL, " \t\r\n", &save))) {
				int i = find_hop(h);
				if (i < 0 || n >= MAX_ROUTE)
					goto bad;
				pending[npending].hop[n++] = (uint16_t)i;
			}
			if (pending[npending].src < 0 || pending[npending].dst < 0 || n == 0)
				goto bad;
			pending[npending++].n = n;
		} else {
			goto bad;
		}
	}
	routes = calloc((size_t)nsites * (size_t)(nsites ? nsites : 1), sizeof(*routes));
	for (int i = 0; i < npending; i++) {
		struct route *r = &routes[pending[i].src * nsites + pending[i].dst];
		r->n = (uint8_t)pending[i].n;
		memcpy(r->hop, pending[i].hop, sizeof(r->hop));
	}
	ok = 1;
bad:
	if (!ok)
		fprintf(stderr, "wannet: %s:%d: bad or unknown line\n", path, lineno);
	free(pending);
	fclose(f);
	return ok ? 0 : -1;
}

/* Control file: which hops are down, and the first hop's delay credit. */
static void load_control(const char *path)
{
	if (!path)
		return;
	generation++;
	for (int i = 0; i < nhops; i++)
		hops[i].q.down = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return; /* no file: nothing cut */
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *kind = strtok_r(line, " \t\r\n", &save);
		char *arg = kind ? strtok_r(NULL, " \t\r\n", &save) : NULL;
		if (!arg)
			continue;
		if (!strcmp(kind, "down")) {
			int i = find_hop(arg);
			if (i >= 0)
				hops[i].q.down = 1;
			else
				fprintf(stderr, "wannet: control: no hop %s\n", arg);
		} else if (!strcmp(kind, "credit")) {
			credit_ns = strtoull(arg, NULL, 10);
		}
	}
	fclose(f);
}

static void write_stats(const char *path, int final)
{
	if (!path)
		return;
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	uint64_t now = now_ns();
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	fprintf(f,
		"{\"pid\":%d,\"mono_ns\":%llu,\"time\":%.3f,\"final\":%s,\"generation\":%llu,"
		"\"credit_ns\":%llu,\"tun_rx_pkts\":%llu,\"noroute_pkts\":%llu,"
		"\"delivered_pkts\":%llu,\"delivered_bytes\":%llu,\"deliver_err\":%llu,\"hops\":{",
		(int)getpid(), (unsigned long long)now, (double)rt.tv_sec + rt.tv_nsec / 1e9,
		final ? "true" : "false", (unsigned long long)generation, (unsigned long long)credit_ns,
		(unsigned long long)tun_rx, (unsigned long long)noroute, (unsigned long long)delivered_pkts,
		(unsigned long long)delivered_bytes, (unsigned long long)deliver_err);
	for (int i = 0; i < nhops; i++) {
		fprintf(f, "%s\"%s\":", i ? "," : "", hops[i].name);
		dirq_dump_json(f, &hops[i].q, now);
	}
	fputs("}}\n", f);
	fclose(f);
	rename(tmp, path);
}

/* Packets from the sites: find each one's route and offer it to the first hop. */
static void ingest(void)
{
	static uint8_t buf[READ_SIZE];
	for (int i = 0; i < TUN_BATCH; i++) {
		ssize_t n = read(tun_fd, buf, sizeof(buf));
		if (n < 0)
			return; /* EAGAIN: drained */
		tun_rx++;
		const uint8_t *ip = buf + VNET_HDR_LEN;
		if (n < VNET_HDR_LEN + 20 || (ip[0] >> 4) != 4) {
			noroute++;
			continue;
		}
		uint32_t src, dst;
		memcpy(&src, ip + 12, 4);
		memcpy(&dst, ip + 16, 4);
		int s = site_of(src), t = site_of(dst);
		const struct route *r = s >= 0 && t >= 0 ? &routes[s * nsites + t] : NULL;
		if (!r || r->n == 0) {
			noroute++;
			continue;
		}
		uint32_t tag = (uint32_t)(s * nsites + t) << 5;
		dirq_offer(&hops[r->hop[0]].q, buf, (size_t)n, tag, credit_ns, now_ns());
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: wannet --tun DEV --config FILE [--control FILE] [--stats FILE]\n"
			"              [--stats-ms N] [--rt PRIO] [--seed S]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"tun", 1, 0, 't'},   {"config", 1, 0, 'c'},   {"control", 1, 0, 'C'},
		{"stats", 1, 0, 'S'}, {"stats-ms", 1, 0, 'i'}, {"rt", 1, 0, 'p'},
		{"seed", 1, 0, 's'},  {"help", 0, 0, 'h'},     {0, 0, 0, 0}};
	const char *dev = NULL, *config = NULL, *control = NULL, *stats = NULL;
	int stats_ms = 500, rt = 0, c;
	uint64_t seed = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't': dev = optarg; break;
		case 'c': config = optarg; break;
		case 'C': control = optarg; break;
		case 'S': stats = optarg; break;
		case 'i': stats_ms = atoi(optarg); break;
		case 'p': rt = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 10); break;
		default: usage(); return 2;
		}
	}
	if (!dev || !config || stats_ms <= 0) {
		usage();
		return 2;
	}
	if (parse_config(config, seed) < 0)
		return 2;
	tun_fd = tun_open(dev);
	if (tun_fd < 0) {
		fprintf(stderr, "wannet: tun %s: %s\n", dev, strerror(errno));
		return 1;
	}
	load_control(control);

	int sfd = evloop_signals(1);
	int stfd = evloop_interval_timer(stats_ms);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || sfd < 0 || stfd < 0 || evloop_watch(ep, tun_fd, TAG_TUN) ||
	    evloop_watch(ep, sfd, TAG_SIGNAL) || evloop_watch(ep, stfd, TAG_STATS)) {
		perror("wannet: setup");
		return 1;
	}
	for (int i = 0; i < nhops; i++)
		if (evloop_watch(ep, hops[i].q.timer_fd, (uint32_t)i)) {
			perror("wannet: setup");
			return 1;
		}
	evloop_realtime(rt, -1);
	write_stats(stats, 0); /* also tells the caller we are ready */

	for (;;) {
		struct epoll_event ev[32];
		int n = epoll_wait(ep, ev, 32, -1);
		if (n < 0 && errno != EINTR) {
			perror("wannet: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			uint32_t tag = ev[i].data.u32;
			if (tag < (uint32_t)nhops) {
				dirq_release(&hops[tag].q, now_ns);
			} else if (tag == TAG_TUN) {
				ingest();
			} else if (tag == TAG_SIGNAL) {
				struct signalfd_siginfo si;
				if (read(sfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (si.ssi_signo == SIGHUP) {
					load_control(control);
					write_stats(stats, 0);
					continue;
				}
				write_stats(stats, 1);
				return 0;
			} else {
				uint64_t x;
				if (read(stfd, &x, sizeof(x)) > 0)
					write_stats(stats, 0);
			}
		}
	}
}
