/* Splitting TCPv4 super-packets into MSS-sized segments. */
#ifndef WANEMU_SEGMENT_H
#define WANEMU_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

/* Shape of one packet as read from the TUN (vnet header + IP packet). */
struct pkt_shape {
	int splittable;   /* 1: TCPv4 GSO super-packet we know how to split */
	uint32_t nseg;    /* segments on the wire (1 if not GSO) */
	uint32_t hdr_len; /* IP + TCP header bytes (splittable only) */
	uint32_t mss;     /* payload bytes per segment (splittable only) */
	uint32_t payload; /* TCP payload bytes (splittable only) */
	uint64_t wire;    /* IP bytes on the emulated link, all segments */
};

/* Classify `buf` (len bytes incl. the vnet header). */
void pkt_classify(const uint8_t *buf, size_t len, struct pkt_shape *s);

/* Wire bytes (IP header + TCP header + payload) of segment i. */
uint32_t seg_wire_len(const struct pkt_shape *s, uint32_t i);

/* Write segment i of super-packet `buf` as a standalone packet (zeroed vnet
 * header, full software IP and TCP checksums) into out.  Returns bytes
 * written (vnet header included). */
size_t seg_build(const uint8_t *buf, const struct pkt_shape *s, uint32_t i, uint8_t *out);

#endif
