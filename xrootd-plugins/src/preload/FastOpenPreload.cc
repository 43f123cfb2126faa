// TCP Fast Open for every outgoing TCP connection of a process that loads this library with
// LD_PRELOAD: the storage sites' xrootd servers, whose HTTP third-party copies (XrdHttpTPC)
// open their connections to the source through libcurl, which asks no Fast Open of its own.
//
// A davs:// pull opens two TLS connections to the source (a HEAD on one, the GET on the
// other): each waits one round trip for the TCP handshake before its ClientHello, two of the
// five and a half round trips before the first data byte at 300 ms
// (docs/benchmarks/copy-round-trips.md). With TCP_FASTOPEN_CONNECT set before connect(), a
// connection to a source that gave this host a Fast Open cookie before carries the
// ClientHello in its SYN (FastOpen.hh says what each end needs; curl's own
// CURLOPT_TCP_FASTOPEN does the same on Linux).
//
// This connect() comes before the C library's in symbol resolution (LD_PRELOAD), asks for
// Fast Open on AF_INET/AF_INET6 stream sockets (FastOpen.cc; anything else is left alone) and
// calls the next connect() in line (the C library's). It never fails a connection itself.
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>

#include "tpc/FastOpen.hh"

namespace {

using ConnectFn = int (*)(int, const struct sockaddr*, socklen_t);

ConnectFn nextConnect() {
    // Looked up on each call rather than cached in a static: resolving is cheap next to a
    // connection, and no initialisation order or thread-safety question arises.
    return reinterpret_cast<ConnectFn>(dlsym(RTLD_NEXT, "connect"));
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int connect(int fd, const struct sockaddr* addr,
                                                              socklen_t len) {
    const ConnectFn next = nextConnect();
    if (next == nullptr) {
        errno = ENOSYS;
        return -1;
    }
    wanio::requestFastOpen(fd);
    return next(fd, addr, len);
}
