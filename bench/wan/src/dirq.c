/* Direction queue: rate + delay computed in one step at enqueue time.
 *
 * Each accepted packet gets departure = max(now, busy_until) + bits/rate
 * (the token-bucket bottleneck with a drop-tail queue) and
 * release = departure + delay.  The queue content in bytes is therefore
 * (busy_until - now) * rate, with no per-packet bookkeeping, and a single
 * absolute timerfd armed for the oldest packet wakes us: no busy spinning. */
#define _GNU_SOURCE
#include "dirq.h"
#include "pkttrace.h"
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
	void *m =
		mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

int dirq_init(struct dirq *q, const char *name, int tun_fd, const struct dirq_params *p, uint64_t seed)
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
	if (p->arena_bytes)
		want = (size_t)p->arena_bytes;
	if (want < 4 * MAX_READ)
		want = 4 * MAX_READ;
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

/* Contiguous space for `need` bytes at the arena tail, or NULL.  push()
 * advances the tail by the packet's length rounded up to 64 bytes, so that is
 * what must fit: with less, the tail could overtake the head (or run past the
 * arena's end) and the next packet would overwrite queued ones. */
static uint8_t *reserve(struct dirq *q, size_t need)
{
	need = ALIGN64(need);
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
static uint64_t schedule(struct dirq *q, uint64_t wire, uint64_t credit, uint64_t now)
{
	uint64_t delay = q->p.delay_ns > credit ? q->p.delay_ns - credit : 0;
	if (q->p.rate_bps <= 0)
		return now + delay;
	if (q->busy_until_ns < (double)now)
		q->busy_until_ns = (double)now;
	q->busy_until_ns += (double)wire * 8e9 / q->p.rate_bps;
	return (uint64_t)q->busy_until_ns + delay;
}

static int fits(struct dirq *q, uint64_t wire, uint64_t now)
{
	if (q->p.rate_bps <= 0)
		return 1;
	return dirq_backlog(q, now) + wire <= q->p.qlimit;
}

/* What one packet carries through handle(): its label and delay credit. */
struct offer {
	uint32_t tag;
	uint64_t credit;
};

static void push(struct dirq *q, uint8_t *at, uint32_t len, uint32_t segs, uint64_t wire,
		 const struct offer *o, uint64_t now)
{
	int was_empty = empty(q);
	struct pkt_desc *d = &q->ring[q->rtail & q->ring_mask];
	d->off = (uint64_t)(at - q->arena);
	d->len = len;
	d->segs = segs;
	d->wire = wire;
	d->tag = o->tag;
	d->release_ns = schedule(q, wire, o->credit, now);
	q->rtail++;
	q->tail = d->off + ALIGN64(len);
	uint64_t b = dirq_backlog(q, now);
	if (b > q->st.backlog_max)
		q->st.backlog_max = b;
	if (was_empty)
		arm(q);
}

static int ring_full(const struct dirq *q) { return q->rtail - q->rhead > q->ring_mask; }

/* Slow path: at least one segment of a super-packet is dropped; re-emit the
 * survivors as individual packets. keep[i] says which segments survive. */
static void emit_split(struct dirq *q, const uint8_t *buf, size_t len, const struct pkt_shape *s,
		       const uint8_t *keep, const struct offer *o, uint64_t now)
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
		push(q, at, (uint32_t)n, 1, w, o, now);
	}
}

/* Count an IPv6 packet under its flow label (bytes: the IP bytes on the link). */
static void count_label(struct dirq *q, const uint8_t *buf, size_t len, const struct pkt_shape *s)
{
	if (len < (size_t)VNET_HDR_LEN + 40)
		return;
	const uint8_t *ip = buf + VNET_HDR_LEN;
	if ((ip[0] >> 4) != 6)
		return;
	uint32_t label = (uint32_t)(ip[1] & 0x0f) << 16 | (uint32_t)ip[2] << 8 | ip[3];
	struct dirq_labels *t = &q->labels;
	t->pkts += s->nseg;
	t->bytes += s->wire;
	for (uint32_t i = 0; i < t->n; i++) {
		if (t->row[i].label == label) {
			t->row[i].pkts += s->nseg;
			t->row[i].bytes += s->wire;
			return;
		}
	}
	if (t->n < DIRQ_LABELS) {
		t->row[t->n].label = label;
		t->row[t->n].pkts = s->nseg;
		t->row[t->n].bytes = s->wire;
		t->n++;
		return;
	}
	t->other_pkts += s->nseg;
	t->other_bytes += s->wire;
}

static void handle(struct dirq *q, uint8_t *buf, size_t len, const struct offer *o, uint64_t now)
{
	struct pkt_shape s;
	pkt_classify(buf, len, &s);
	count_label(q, buf, len, &s);
	if (q->trace)
		pkttrace_record(q->trace, q->name, buf, len, now);
	q->st.rx_pkts++;
	q->st.rx_segs += s.nseg;
	q->st.rx_bytes += s.wire;
	if (q->down) { /* a cut link carries nothing */
		q->st.drop_down += s.nseg;
		return;
	}

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
		push(q, buf, (uint32_t)len, s.nseg, s.wire, o, now);
		return;
	}
	if (!s.splittable) /* cannot happen: non-GSO packets have nseg == 1 */
		return;
	emit_split(q, buf, len, &s, keep, o, now);
}

void dirq_ingest(struct dirq *q, uint64_t (*now)(void))
{
	static const struct offer plain = {0, 0};
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
		handle(q, at, (size_t)n, &plain, now());
	}
}

void dirq_offer(struct dirq *q, const uint8_t *buf, size_t len, uint32_t tag, uint64_t credit_ns,
		uint64_t now)
{
	uint8_t *at = len > MAX_READ || ring_full(q) ? NULL : reserve(q, len);
	if (!at) {
		struct pkt_shape s;
		pkt_classify(buf, len, &s);
		q->st.rx_pkts++;
		q->st.rx_segs += s.nseg;
		q->st.rx_bytes += s.wire;
		q->st.drop_ring += s.nseg;
		return;
	}
	memcpy(at, buf, len);
	struct offer o = {tag, credit_ns};
	handle(q, at, len, &o, now);
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
		int failed;
		if (q->down) { /* cut while in flight: lost with the link */
			q->st.drop_down += d->segs;
			q->rhead++;
			continue;
		}
		if (q->sink)
			failed = q->sink(q->sink_ctx, q, d, q->arena + d->off, t) < 0;
		else
			failed = write(q->tun_fd, q->arena + d->off, d->len) != (ssize_t)d->len;
		if (failed) {
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

void dirq_dump_json(FILE *f, const struct dirq *q, uint64_t now)
{
	const struct dirq_stats *s = &q->st;
	fprintf(f,
		"{\"delay_ns\":%llu,\"rate_bps\":%.0f,\"queue_limit\":%llu,"
		"\"loss\":%g,\"rx_pkts\":%llu,\"rx_segs\":%llu,\"rx_bytes\":%llu,"
		"\"tx_pkts\":%llu,\"tx_segs\":%llu,\"tx_bytes\":%llu,"
		"\"drop_loss\":%llu,\"drop_queue\":%llu,\"drop_ring\":%llu,"
		"\"drop_down\":%llu,\"down\":%s,"
		"\"splits\":%llu,\"tx_err\":%llu,\"late_gt1ms\":%llu,"
		"\"late_gt10ms\":%llu,\"late_max_ns\":%llu,\"backlog\":%llu,"
		"\"backlog_max\":%llu,\"queued_pkts\":%llu,",
		(unsigned long long)q->p.delay_ns, q->p.rate_bps, (unsigned long long)q->p.qlimit, q->p.loss,
		(unsigned long long)s->rx_pkts, (unsigned long long)s->rx_segs,
		(unsigned long long)s->rx_bytes, (unsigned long long)s->tx_pkts,
		(unsigned long long)s->tx_segs, (unsigned long long)s->tx_bytes,
		(unsigned long long)s->drop_loss, (unsigned long long)s->drop_queue,
		(unsigned long long)s->drop_ring, (unsigned long long)s->drop_down,
		q->down ? "true" : "false", (unsigned long long)s->splits, (unsigned long long)s->tx_err,
		(unsigned long long)s->late_gt1ms, (unsigned long long)s->late_gt10ms,
		(unsigned long long)s->late_max_ns, (unsigned long long)dirq_backlog(q, now),
		(unsigned long long)s->backlog_max, (unsigned long long)(q->rtail - q->rhead));
	const struct dirq_labels *t = &q->labels;
	fprintf(f, "\"ipv6_pkts\":%llu,\"ipv6_bytes\":%llu,\"flow_labels\":[", (unsigned long long)t->pkts,
		(unsigned long long)t->bytes);
	for (uint32_t i = 0; i < t->n; i++)
		fprintf(f, "%s{\"label\":%u,\"pkts\":%llu,\"bytes\":%llu}", i ? "," : "", t->row[i].label,
			(unsigned long long)t->row[i].pkts, (unsigned long long)t->row[i].bytes);
	fprintf(f, "],\"flow_labels_other_pkts\":%llu,\"flow_labels_other_bytes\":%llu}",
		(unsigned long long)t->other_pkts, (unsigned long long)t->other_bytes);
}
