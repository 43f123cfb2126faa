/* TUN attach with IFF_VNET_HDR + TUNSETOFFLOAD.
 *
 * Why: with offloads announced, the kernel hands us 64 KB TCP super-packets
 * (GSO) instead of 1500-byte segments, so one read()/write() moves ~45
 * segments.  That is what lets a userspace emulator keep up at Gbit/s rates
 * on a 2-core box while the end hosts still use a normal MSS. */
#define _GNU_SOURCE
#include "tun.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int tun_open(const char *name)
{
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;

	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	/* Flags must match those of a device pre-created with
	 * `ip tuntap add mode tun vnet_hdr`, otherwise TUNSETIFF fails. */
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
	strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		goto fail;

	int hdrsz = VNET_HDR_LEN;
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdrsz) < 0)
		goto fail;

	/* IPv4 TSO only: we can split TCPv4 super-packets per segment. IPv6
	 * (a path brought up with ipv6=True) is offered no TSO6, so the kernel
	 * segments it first and hands us MTU-sized IPv6 packets. */
	unsigned int off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO_ECN;
	if (ioctl(fd, TUNSETOFFLOAD, off) < 0)
		goto fail;
	return fd;

fail:;
	int saved = errno;
	close(fd);
	errno = saved;
	return -1;
}
