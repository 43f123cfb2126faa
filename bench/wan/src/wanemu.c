/* wanemu: userspace WAN path emulator between two TUN devices.
 *
 * One TUN per direction (A->B and B->A) in a router network namespace.
 * Policy routing sends each direction's traffic into its TUN; we hold every
 * packet for its computed release time (bottleneck rate + one-way delay,
 * drop-tail queue, optional Bernoulli loss) and write it back into the same
 * TUN, from where the kernel routes it on to the far end host.
 *
 * Counters are written as JSON to --stats every interval and on exit
 * (SIGTERM/SIGINT), so callers can check fidelity (drops == retransmits,
 * lateness, queue bound).  --trace FILE records every TCP packet offered to
 * either direction (pkttrace.h), flushed with the counters. */
#define _GNU_SOURCE
#include "dirq.h"
#include "evloop.h"
#include "pkttrace.h"
#include "tun.h"

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

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: wanemu --dev-ab TUN --dev-ba TUN [options]\n"
		"  --delay-ab-us N --delay-ba-us N   one-way delay per direction\n"
		"  --rate-ab-bps R --rate-ba-bps R   bottleneck, IP-layer bit/s (0 = none)\n"
		"  --queue-ab-bytes Q --queue-ba-bytes Q  drop-tail limit (default 1 BDP, min 64 KiB)\n"
		"  --loss-ab P --loss-ba P           Bernoulli loss per segment (0..1)\n"
		"  --seed S  --stats FILE  --stats-ms N  --rt PRIO  --cpu N\n"
		"  --trace FILE  --trace-max N      per-packet trace, at most N packets (default 1000000)\n");
}

struct opts {
	const char *dev[2];
	struct dirq_params p[2];
	int qset[2];
	uint64_t seed;
	const char *stats;
	int stats_ms, rt, cpu;
	const char *trace;
	uint64_t trace_max;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {{"dev-ab", 1, 0, 'a'},
					   {"dev-ba", 1, 0, 'b'},
					   {"delay-ab-us", 1, 0, 'd'},
					   {"delay-ba-us", 1, 0, 'D'},
					   {"rate-ab-bps", 1, 0, 'r'},
					   {"rate-ba-bps", 1, 0, 'R'},
					   {"queue-ab-bytes", 1, 0, 'q'},
					   {"queue-ba-bytes", 1, 0, 'Q'},
					   {"loss-ab", 1, 0, 'l'},
					   {"loss-ba", 1, 0, 'L'},
					   {"seed", 1, 0, 's'},
					   {"stats", 1, 0, 'S'},
					   {"stats-ms", 1, 0, 'i'},
					   {"rt", 1, 0, 'p'},
					   {"cpu", 1, 0, 'c'},
					   {"trace", 1, 0, 't'},
					   {"trace-max", 1, 0, 'T'},
					   {"help", 0, 0, 'h'},
					   {0, 0, 0, 0}};
	memset(o, 0, sizeof(*o));
	o->stats_ms = 1000;
	o->cpu = -1;
	o->trace_max = 1000000;
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'a': o->dev[0] = optarg; break;
		case 'b': o->dev[1] = optarg; break;
		case 'd': o->p[0].delay_ns = strtoull(optarg, 0, 10) * 1000; break;
		case 'D': o->p[1].delay_ns = strtoull(optarg, 0, 10) * 1000; break;
		case 'r': o->p[0].rate_bps = strtod(optarg, 0); break;
		case 'R': o->p[1].rate_bps = strtod(optarg, 0); break;
		case 'q':
			o->p[0].qlimit = strtoull(optarg, 0, 10);
			o->qset[0] = 1;
			break;
		case 'Q':
			o->p[1].qlimit = strtoull(optarg, 0, 10);
			o->qset[1] = 1;
			break;
		case 'l': o->p[0].loss = strtod(optarg, 0); break;
		case 'L': o->p[1].loss = strtod(optarg, 0); break;
		case 's': o->seed = strtoull(optarg, 0, 10); break;
		case 'S': o->stats = optarg; break;
		case 'i': o->stats_ms = atoi(optarg); break;
		case 'p': o->rt = atoi(optarg); break;
		case 'c': o->cpu = atoi(optarg); break;
		case 't': o->trace = optarg; break;
		case 'T': o->trace_max = strtoull(optarg, 0, 10); break;
		default: usage(); return -1;
		}
	}
	if (!o->dev[0] || !o->dev[1] || o->stats_ms <= 0) {
		usage();
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		if (o->p[i].loss < 0 || o->p[i].loss > 1 || o->p[i].rate_bps < 0) {
			usage();
			return -1;
		}
		/* Default queue: one delay-bandwidth product of the round trip. */
		if (!o->qset[i]) {
			double rtt = (double)(o->p[0].delay_ns + o->p[1].delay_ns) / 1e9;
			o->p[i].qlimit = (uint64_t)(o->p[i].rate_bps / 8.0 * rtt);
			if (o->p[i].qlimit < 65536) /* one TSO burst must fit */
				o->p[i].qlimit = 65536;
		}
	}
	return 0;
}

static void dump_dir(FILE *f, const struct dirq *q, uint64_t now)
{
	fprintf(f, "\"%s\":", q->name);
	dirq_dump_json(f, q, now);
}

/* Atomic replace so readers never see a half-written file. */
static void write_stats(const char *path, struct dirq *q, int final)
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
	fprintf(f, "{\"pid\":%d,\"mono_ns\":%llu,\"time\":%.3f,\"final\":%s,", (int)getpid(),
		(unsigned long long)now, (double)rt.tv_sec + rt.tv_nsec / 1e9, final ? "true" : "false");
	dump_dir(f, &q[0], now);
	fputc(',', f);
	dump_dir(f, &q[1], now);
	fputs("}\n", f);
	fclose(f);
	rename(tmp, path);
}

int main(int argc, char **argv)
{
	struct opts o;
	if (parse(argc, argv, &o) < 0)
		return 2;

	static struct dirq q[2];
	static const char *names[2] = {"ab", "ba"};
	for (int i = 0; i < 2; i++) {
		int fd = tun_open(o.dev[i]);
		if (fd < 0) {
			fprintf(stderr, "wanemu: tun %s: %s\n", o.dev[i], strerror(errno));
			return 1;
		}
		if (dirq_init(&q[i], names[i], fd, &o.p[i], o.seed * 2 + (uint64_t)i + 1) < 0) {
			fprintf(stderr, "wanemu: init %s: %s\n", names[i], strerror(errno));
			return 1;
		}
	}

	static struct pkttrace trace;
	if (o.trace) {
		if (pkttrace_open(&trace, o.trace, o.trace_max) < 0) {
			fprintf(stderr, "wanemu: trace %s: %s\n", o.trace, strerror(errno));
			return 1;
		}
		q[0].trace = q[1].trace = &trace;
	}

	int sfd = evloop_signals(0);
	int stfd = evloop_interval_timer(o.stats_ms);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	/* tags: 0/1 tun rx, 2/3 release timers, 4 signal, 5 stats */
	if (ep < 0 || sfd < 0 || stfd < 0 || evloop_watch(ep, q[0].tun_fd, 0) ||
	    evloop_watch(ep, q[1].tun_fd, 1) || evloop_watch(ep, q[0].timer_fd, 2) ||
	    evloop_watch(ep, q[1].timer_fd, 3) || evloop_watch(ep, sfd, 4) || evloop_watch(ep, stfd, 5)) {
		perror("wanemu: setup");
		return 1;
	}
	evloop_realtime(o.rt, o.cpu);
	write_stats(o.stats, q, 0); /* also signals readiness to the caller */

	for (;;) {
		struct epoll_event ev[8];
		int n = epoll_wait(ep, ev, 8, -1);
		if (n < 0 && errno != EINTR) {
			perror("wanemu: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			uint32_t tag = ev[i].data.u32;
			if (tag <= 1) {
				dirq_ingest(&q[tag], now_ns);
			} else if (tag <= 3) {
				dirq_release(&q[tag - 2], now_ns);
			} else if (tag == 4) {
				pkttrace_close(&trace);
				write_stats(o.stats, q, 1);
				return 0;
			} else {
				uint64_t x;
				/* The trace first: a reader that sees new counters sees the packets up to
				 * them. */
				pkttrace_flush(&trace);
				if (read(stfd, &x, sizeof(x)) > 0)
					write_stats(o.stats, q, 0);
			}
		}
	}
}
