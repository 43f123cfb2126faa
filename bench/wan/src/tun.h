/* Open an existing (or new) TUN device with virtio-net headers and TCP offloads. */
#ifndef WANEMU_TUN_H
#define WANEMU_TUN_H

#include <linux/virtio_net.h>

/* Size of the per-packet header the kernel prepends (legacy virtio_net_hdr). */
#define VNET_HDR_LEN ((int)sizeof(struct virtio_net_hdr))

/* Returns a non-blocking fd attached to TUN device `name`, or -1 (errno set). */
int tun_open(const char *name);

#endif
