/* One emulated direction: drop-tail bottleneck queue + fixed one-way delay. */
#ifndef WANEMU_DIRQ_H
#define WANEMU_DIRQ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pkttrace;

struct dirq_params {
	uint64_t delay_ns;    /* one-way propagation delay */
	double rate_bps;      /* bottleneck rate in IP-layer bits/s; 0 = unlimited */
	uint64_t qlimit;      /* bottleneck queue limit in IP bytes */
	double loss;          /* Bernoulli loss probability per segment */
	uint64_t arena_bytes; /* packet memory; 0 = what the link can hold + 64 MiB */
};

struct dirq_stats {
	uint64_t rx_pkts, rx_segs, rx_bytes;       /* offered to the link */
	uint64_t tx_pkts, tx_segs, tx_bytes;       /* delivered after delay */
	uint64_t drop_loss, drop_queue, drop_ring; /* segments dropped, by cause */
	uint64_t drop_down;                        /* segments lost while the link was cut */
	uint64_t splits, tx_err;
	uint64_t late_gt1ms, late_gt10ms, late_max_ns;
	uint64_t backlog_max; /* bytes, max observed */
};

/* What the link saw of IPv6, per flow label (each packet's 20-bit label as it
 * arrived): the first DIRQ_LABELS distinct labels get a row of their own, the
 * rest are counted together, so the table never grows with the traffic. */
#define DIRQ_LABELS 64
struct dirq_label {
	uint32_t label;
	uint64_t pkts, bytes;
};
struct dirq_labels {
	uint64_t pkts, bytes; /* every IPv6 packet offered to the link */
	uint32_t n;
	struct dirq_label row[DIRQ_LABELS];
	uint64_t other_pkts, other_bytes; /* labels beyond the table */
};

struct pkt_desc {
	uint64_t off;        /* offset in the arena */
	uint64_t release_ns; /* when it leaves the delay line */
	uint32_t len;        /* bytes incl. vnet header */
	uint32_t segs;
	uint32_t tag; /* the owner's label (wannet: route and hop) */
	uint64_t wire;
};

struct dirq;
/* Where a released packet goes instead of back into the TUN (wannet: the
 * next hop of its route). Returns 0 if it was taken, -1 on error. */
typedef int (*dirq_sink)(void *ctx, struct dirq *q, const struct pkt_desc *d, uint8_t *data, uint64_t now);

struct dirq {
	const char *name;
	int tun_fd, timer_fd;
	struct dirq_params p;
	struct dirq_stats st;
	struct dirq_labels labels;
	double busy_until_ns; /* when the bottleneck finishes its last byte */
	uint64_t rng;
	/* Byte arena holding packets in flight, used as a circular buffer. */
	uint8_t *arena;
	size_t arena_size, tail;
	/* FIFO of descriptors; release times are monotonic because the delay is
	 * constant and departures are serialised, so a ring suffices. */
	struct pkt_desc *ring;
	uint64_t ring_mask, rhead, rtail;
	uint8_t *scratch; /* copy of a super-packet being split */
	dirq_sink sink;   /* NULL: write released packets to tun_fd */
	void *sink_ctx;
	int down;               /* cut: everything offered or in flight is lost */
	struct pkttrace *trace; /* NULL: no per-packet trace (wanemu --trace) */
};

int dirq_init(struct dirq *q, const char *name, int tun_fd, const struct dirq_params *p, uint64_t seed);

/* Read available packets from the TUN (bounded batch). now = CLOCK_MONOTONIC ns. */
void dirq_ingest(struct dirq *q, uint64_t (*now)(void));

/* Offer one packet (vnet header + IP packet, copied in) to the link at `now`,
 * labelled `tag`; `credit_ns` is taken off its delay (never below zero). */
void dirq_offer(struct dirq *q, const uint8_t *buf, size_t len, uint32_t tag, uint64_t credit_ns,
		uint64_t now);

/* Write every packet whose release time has come, then re-arm the timer. */
void dirq_release(struct dirq *q, uint64_t (*now)(void));

/* Bytes waiting in the bottleneck queue at time now. */
uint64_t dirq_backlog(const struct dirq *q, uint64_t now);

/* The link's parameters and counters as one JSON object (no key). */
void dirq_dump_json(FILE *f, const struct dirq *q, uint64_t now);

#endif
