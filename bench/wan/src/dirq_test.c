/* dirq_test: the arena invariant of a direction queue, checked alone.
 *
 * Packets of every length from 60 to 2000 bytes are offered to a queue whose
 * delay keeps them all in the arena, until it is full; after each one the
 * arena's tail must stay within the arena (a tail past its end meant the next
 * packet was written beyond it, over whatever memory follows).  Exit status 0
 * when the invariant held for every length; the first violation is printed. */
#define _GNU_SOURCE
#include "dirq.h"
#include "tun.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	static uint8_t pkt[4096];
	for (size_t len = 60; len <= 2000; len++) {
		struct dirq q;
		struct dirq_params p = {0};
		p.delay_ns = 10ULL * 1000000000ULL; /* nothing leaves during the test */
		p.qlimit = 1 << 30;
		p.arena_bytes = 300000; /* not a multiple of 64: the end is reached unaligned */
		if (dirq_init(&q, "test", -1, &p, 1) < 0) {
			perror("dirq_init");
			return 2;
		}
		memset(pkt, 0, sizeof(pkt));
		pkt[VNET_HDR_LEN] = 0x45; /* a plain IPv4 packet: one segment */
		for (int i = 0; i < 100000 && q.st.drop_ring == 0; i++) {
			dirq_offer(&q, pkt, len, 0, 0, 1);
			if (q.tail > q.arena_size) {
				printf("length %zu: tail %zu past the arena's end %zu after %d packets\n",
				       len, q.tail, q.arena_size, i + 1);
				return 1;
			}
		}
		if (q.st.drop_ring == 0) {
			printf("length %zu: the arena never filled\n", len);
			return 1;
		}
		munmap(q.arena, q.arena_size);
		munmap(q.ring, (q.ring_mask + 1) * sizeof(struct pkt_desc));
		munmap(q.scratch, VNET_HDR_LEN + 65536 + 256);
		close(q.timer_fd);
	}
	printf("ok\n");
	return 0;
}
