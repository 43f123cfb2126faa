/* Direction queue: rate + delay computed in one step at enqueue time.
 *
 * Each accepted packet gets departure = max(now, busy_until) + bits/rate
 * (the token-bucket bottleneck with a drop-tail queue) and
 * release = departure + delay.  The queue content in bytes is therefore
 * (busy_until - now) * rate, with no per-packet bookkeeping, and a single
 * absolute timerfd armed for the oldest packet wakes us: no busy spinning. */
#define _GNU_SOURCE
#include "dirq.h"
#include "segment.h"
#include "tun.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define MAX_READ (VNET_HDR_LEN + 65536 + 256)
#define ALIGN64(x) (((x) + 63) & ~(size_t)63)
#define INGEST_BATCH 64

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static int lost(struct dirq *q)
{
	if (q->p.loss <= 0.0)
		return 0;
	return (double)(xorshift(&q->rng) >> 11) * 0x1.0p-53 < q->p.loss;
}

static void *map(size_t size)
{
	/* NORESERVE: only pages actually touched by packets cost memory. */
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

int dirq_init(struct dirq *q, const char *name, int tun_fd,
	      const struct dirq_params *p, uint64_t seed)
{
	memset(q, 0, sizeof(*q));
	q->name = name;
	q->tun_fd = tun_fd;
	q->p = *p;
	q->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;

	/* Enough room for everything the link can hold: bytes in the delay line
	 * (rate x delay) plus a full queue, with headroom for 64-byte alignment. */
	double inflight = p->rate_bps > 0 ? p->rate_bps / 8.0 * (double)p->delay_ns / 1e9
					  : 2e9 * (double)p->delay_ns / 1e9;
	size_t want = (size_t)((inflight + (double)p->qlimit) * 1.5) + (64u << 20);
	q->arena_size = want;
	q->arena = map(q->arena_size);
	/* One descriptor per 256 arena bytes covers ACK-only reverse traffic. */
	uint64_t n = 65536;
	while (n < q->arena_size / 256)
		n <<= 1;
	q->ring = map(n * sizeof(struct pkt_desc));
	q->ring_mask = n - 1;
	q->scratch = map(MAX_READ);
	if (!q->arena || !q->ring || !q->scratch)
		return -1;

	q->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	return q->timer_fd < 0 ? -1 : 0;
}

static int empty(const struct dirq *q) { return q->rhead == q->rtail; }

/* Contiguous space for `need` bytes at the arena tail, or NULL. */
static uint8_t *reserve(struct dirq *q, size_t need)
{
	if (empty(q))
		q->tail = 0;
	if (empty(q))
		return need <= q->arena_size ? q->arena : NULL;
	size_t h = q->ring[q->rhead & q->ring_mask].off;
	if (q->tail > h) {
		if (q->arena_size - q->tail >= need)
			return q->arena + q->tail;
		if (h > need) { /* wrap; strict so tail never meets head */
			q->tail = 0;
			return q->arena;
		}
		return NULL;
	}
	return h - q->tail > need ? q->arena + q->tail : NULL;
}

uint64_t dirq_backlog(const struct dirq *q, uint64_t now)
{
	if (q->p.rate_bps <= 0 || q->busy_until_ns <= (double)now)
		return 0;
	return (uint64_t)((q->busy_until_ns - (double)now) * q->p.rate_bps / 8e9);
}

static void arm(struct dirq *q)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (!empty(q)) {
		uint64_t t = q->ring[q->rhead & q->ring_mask].release_ns;
		if (t == 0)
			t = 1; /* 0 would disarm */
		its.it_value.tv_sec = (time_t)(t / 1000000000ULL);
		its.it_value.tv_nsec = (long)(t % 1000000000ULL);
	}
	timerfd_settime(q->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Admit `wire` bytes to the bottleneck at `now`; returns release time. */
static uint64_t schedule(struct dirq *q, uint64_t wire, uint64_t now)
{
	if (q->p.rate_bps <= 0)
		return now + q->p.delay_ns;
	if (q->busy_until_ns < (double)now)
		q->busy_until_ns = (double)now;
	q->busy_until_ns += (double)wire * 8e9 / q->p.rate_bps;
	return (uint64_t)q->busy_until_ns + q->p.delay_ns;
}

static int fits(struct dirq *q, uint64_t wire, uint64_t now)
{
	if (q->p.rate_bps <= 0)
		return 1;
	return dirq_backlog(q, now) + wire <= q->p.qlimit;
}

static void push(struct dirq *q, uint8_t *at, uint32_t len, uint32_t segs,
		 uint64_t wire, uint64_t now)
{
	int was_empty = empty(q);
	struct pkt_desc *d = &q->ring[q->rtail & q->ring_mask];
	d->off = (uint64_t)(at - q->arena);
	d->len = len;
	d->segs = segs;
	d->wire = wire;
	d->release_ns = schedule(q, wire, now);
	q->rtail++;
	q->tail = d->off + ALIGN64(len);
	uint64_t b = dirq_backlog(q, now);
	if (b > q->st.backlog_max)
		q->st.backlog_max = b;
	if (was_empty)
		arm(q);
}

static int ring_full(const struct dirq *q)
{
	return q->rtail - q->rhead > q->ring_mask;
}

/* Slow path: at least one segment of a super-packet is dropped; re-emit the
 * survivors as individual packets. keep[i] says which segments survive. */
static void emit_split(struct dirq *q, const uint8_t *buf, size_t len,
		       const struct pkt_shape *s, const uint8_t *keep, uint64_t now)
{
	memcpy(q->scratch, buf, len); /* buf lives at the arena tail we reuse */
	q->st.splits++;
	for (uint32_t i = 0; i < s->nseg; i++) {
		if (!keep[i])
			continue;
		uint32_t w = seg_wire_len(s, i);
		uint8_t *at = ring_full(q) ? NULL : reserve(q, VNET_HDR_LEN + w);
		if (!at) {
			q->st.drop_ring++;
			continue;
		}
		size_t n = seg_build(q->scratch, s, i, at);
		push(q, at, (uint32_t)n, 1, w, now);
	}
}

static void handle(struct dirq *q, uint8_t *buf, size_t len, uint64_t now)
{
	struct pkt_shape s;
	pkt_classify(buf, len, &s);
	q->st.rx_pkts++;
	q->st.rx_segs += s.nseg;
	q->st.rx_bytes += s.wire;

	/* Decide per segment: random loss first (the lossy segment never
	 * reaches the bottleneck), then drop-tail admission in arrival order. */
	static uint8_t keep[65536];
	uint32_t kept = 0;
	uint64_t admitted = 0;
	for (uint32_t i = 0; i < s.nseg; i++) {
		uint32_t w = seg_wire_len(&s, i);
		keep[i] = 0;
		if (lost(q)) {
			q->st.drop_loss++;
		} else if (!fits(q, admitted + w, now)) {
			q->st.drop_queue++;
		} else {
			keep[i] = 1;
			admitted += w;
			kept++;
		}
	}
	if (kept == 0)
		return;
	if (kept == s.nseg) { /* fast path: forward the super-packet whole */
		push(q, buf, (uint32_t)len, s.nseg, s.wire, now);
		return;
	}
	if (!s.splittable) /* cannot happen: non-GSO packets have nseg == 1 */
		return;
	emit_split(q, buf, len, &s, keep, now);
}

void dirq_ingest(struct dirq *q, uint64_t (*now)(void))
{
	for (int i = 0; i < INGEST_BATCH; i++) {
		uint8_t *at = ring_full(q) ? NULL : reserve(q, MAX_READ);
		int full = (at == NULL);
		if (full)
			at = q->scratch; /* read anyway so the TUN queue drains */
		ssize_t n = read(q->tun_fd, at, MAX_READ);
		if (n < 0)
			return; /* EAGAIN: drained */
		if (full) {
			struct pkt_shape s;
			pkt_classify(at, (size_t)n, &s);
			q->st.rx_pkts++;
			q->st.rx_segs += s.nseg;
			q->st.rx_bytes += s.wire;
			q->st.drop_ring += s.nseg;
			continue;
		}
		handle(q, at, (size_t)n, now());
	}
}

void dirq_release(struct dirq *q, uint64_t (*now)(void))
{
	uint64_t expirations;
	if (read(q->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return;
	while (!empty(q)) {
		struct pkt_desc *d = &q->ring[q->rhead & q->ring_mask];
		uint64_t t = now();
		if (d->release_ns > t)
			break;
		uint64_t late = t - d->release_ns;
		if (late > 1000000)
			q->st.late_gt1ms++;
		if (late > 10000000)
			q->st.late_gt10ms++;
		if (late > q->st.late_max_ns)
			q->st.late_max_ns = late;
		if (write(q->tun_fd, q->arena + d->off, d->len) != (ssize_t)d->len) {
			q->st.tx_err++;
		} else {
			q->st.tx_pkts++;
			q->st.tx_segs += d->segs;
			q->st.tx_bytes += d->wire;
		}
		q->rhead++;
	}
	arm(q);
}
