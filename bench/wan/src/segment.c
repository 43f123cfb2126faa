/* Per-segment split of TCPv4 GSO super-packets.
 *
 * Why: a drop (random loss or queue overflow) must hit individual
 * MSS-sized segments, exactly as on a real link, so that TCP retransmits
 * equal emulator drops.  Super-packets are only split when at least one of
 * their segments is dropped; otherwise they travel whole (the fast path). */
#include "segment.h"
#include "tun.h"

#include <arpa/inet.h>
#include <linux/virtio_net.h>
#include <string.h>

#define TCP_FLAG_FIN 0x01
#define TCP_FLAG_PSH 0x08
#define TCP_FLAG_CWR 0x80

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}
static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

static uint64_t sum16(uint64_t sum, const uint8_t *p, size_t len)
{
	while (len > 1) {
		sum += rd16(p);
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint64_t)p[0] << 8;
	return sum;
}

static uint16_t fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void pkt_classify(const uint8_t *buf, size_t len, struct pkt_shape *s)
{
	memset(s, 0, sizeof(*s));
	s->nseg = 1;
	s->wire = len > (size_t)VNET_HDR_LEN ? len - VNET_HDR_LEN : 0;
	if (len < (size_t)VNET_HDR_LEN + 40)
		return;

	const struct virtio_net_hdr *vh = (const void *)buf;
	const uint8_t *ip = buf + VNET_HDR_LEN;
	size_t iplen = len - VNET_HDR_LEN;
	if ((vh->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) != VIRTIO_NET_HDR_GSO_TCPV4)
		return;
	if ((ip[0] >> 4) != 4 || ip[9] != IPPROTO_TCP)
		return;
	uint32_t ihl = (ip[0] & 0x0f) * 4u;
	if (ihl < 20 || iplen < ihl + 20)
		return;
	uint32_t doff = (ip[ihl + 12] >> 4) * 4u;
	if (doff < 20 || iplen < ihl + doff || vh->gso_size == 0)
		return;

	s->hdr_len = ihl + doff;
	s->payload = (uint32_t)(iplen - s->hdr_len);
	s->mss = vh->gso_size;
	s->nseg = s->payload ? (s->payload + s->mss - 1) / s->mss : 1;
	s->wire = (uint64_t)s->nseg * s->hdr_len + s->payload;
	s->splittable = 1;
}

uint32_t seg_wire_len(const struct pkt_shape *s, uint32_t i)
{
	if (!s->splittable)
		return (uint32_t)s->wire;
	uint32_t off = i * s->mss;
	uint32_t n = s->payload - off < s->mss ? s->payload - off : s->mss;
	return s->hdr_len + n;
}

size_t seg_build(const uint8_t *buf, const struct pkt_shape *s, uint32_t i, uint8_t *out)
{
	const uint8_t *ip = buf + VNET_HDR_LEN;
	uint32_t ihl = (ip[0] & 0x0f) * 4u;
	uint32_t off = i * s->mss;
	uint32_t n = seg_wire_len(s, i) - s->hdr_len;
	int last = (off + n == s->payload);

	memset(out, 0, VNET_HDR_LEN); /* plain packet, checksums complete */
	uint8_t *o = out + VNET_HDR_LEN;
	memcpy(o, ip, s->hdr_len);
	memcpy(o + s->hdr_len, ip + s->hdr_len + off, n);

	/* IPv4 header: length, per-segment id (as kernel GSO does), checksum. */
	wr16(o + 2, (uint16_t)(s->hdr_len + n));
	wr16(o + 4, (uint16_t)(rd16(ip + 4) + i));
	wr16(o + 10, 0);
	wr16(o + 10, fold(sum16(0, o, ihl)));

	/* TCP header: sequence advances by the payload already sent; FIN/PSH
	 * belong to the last segment only, CWR to the first only. */
	uint8_t *th = o + ihl;
	wr32(th + 4, rd32(ip + ihl + 4) + off);
	if (!last)
		th[13] &= (uint8_t) ~(TCP_FLAG_FIN | TCP_FLAG_PSH);
	if (i != 0)
		th[13] &= (uint8_t)~TCP_FLAG_CWR;

	uint32_t tcplen = s->hdr_len - ihl + n;
	uint64_t sum = sum16(0, o + 12, 8); /* src + dst address */
	sum += IPPROTO_TCP;
	sum += tcplen;
	wr16(th + 16, 0);
	sum = sum16(sum, th, tcplen);
	wr16(th + 16, fold(sum));
	return VNET_HDR_LEN + s->hdr_len + n;
}
