/* A per-packet trace of what each direction offers to its link: when, which
 * TCP connection, which flags, how many payload bytes.  Enough to find when
 * a copy's first data byte went on the wire and how many request/response
 * exchanges came before it (bench/wan/packet_trace.py reads it). */
#ifndef WANEMU_PKTTRACE_H
#define WANEMU_PKTTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pkttrace {
	FILE *f;
	uint64_t left; /* records still allowed: the trace is bounded */
};

/* Open `path` for at most `max_records` records. Returns 0, or -1 (errno). */
int pkttrace_open(struct pkttrace *t, const char *path, uint64_t max_records);

/* One line per packet read from the TUN (vnet header + IP packet of len
 * bytes), stamped `now_ns` (CLOCK_MONOTONIC, the clock every process on the
 * host shares): "<ns> <dir> <v4|v6> <sport> <dport> <tcp flags> <payload bytes>
 * <first four payload bytes in hex, or ->".
 * Non-TCP packets are not recorded. */
void pkttrace_record(struct pkttrace *t, const char *dir, const uint8_t *buf, size_t len, uint64_t now_ns);

void pkttrace_flush(struct pkttrace *t);
void pkttrace_close(struct pkttrace *t);

#endif
