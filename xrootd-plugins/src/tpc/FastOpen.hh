// TCP Fast Open on the copy program's own connections to the source.
//
// A pull opens a new connection to the source for every copy, and its first request (the
// XRootD handshake with kXR_protocol) waits for the TCP handshake: one round trip of the
// four and a half before the first data byte (docs/benchmarks/copy-round-trips.md). With
// TCP_FASTOPEN_CONNECT set before connect(), a connection to a source that gave this host a
// Fast Open cookie before (kept by the kernel per source address) carries that first request
// in its SYN, and the source answers it with its SYN-ACK: the round trip is gone from every
// copy after the first. The socket's owner sees nothing different (connect() returns as if
// connected and the first write() sends the SYN with the data).
//
// Both ends decide: the pulling host needs the client bit of net.ipv4.tcp_fastopen (Linux's
// default is 1), the source host the server bits on every listener (0x402: the dtn_tuning
// role sets 1027 = client, server, and server without the listener's own socket option,
// since XRootD does not set it). A source without them, or a path that drops such SYNs
// (which Linux detects and then stops trying), gets an ordinary connection.
#pragma once

namespace wanio {

// Asks for Fast Open on TCP socket `fd` before its connect(); anything else is left alone.
// Never fails a connection: a kernel that refuses the option connects as before.
void requestFastOpen(int fd);

}  // namespace wanio
