#include "FlowLabelConnect.hh"

#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "FastOpen.hh"
#include "FlowLabel.hh"
#include "PathRtt.hh"

// From <linux/in6.h>, which clashes with glibc's <netinet/in.h>.
#ifndef IPV6_FLOWINFO_SEND
#define IPV6_FLOWINFO_SEND 33
#endif

namespace wanio {
namespace {

std::atomic<int> armedScitag{0};
std::atomic<unsigned long> labelledCount{0};
std::atomic<unsigned long> refusedCount{0};

using ConnectFn = int (*)(int, const struct sockaddr*, socklen_t);

ConnectFn realConnect() {
    static ConnectFn fn = reinterpret_cast<ConnectFn>(dlsym(RTLD_NEXT, "connect"));
    return fn;
}

std::uint32_t entropy() {
    std::uint32_t value = 0;
    if (getrandom(&value, sizeof(value), GRND_NONBLOCK) == static_cast<ssize_t>(sizeof(value)))
        return value;
    // No entropy pool yet (early boot): any varying bits will do, they only spread flows.
    static std::atomic<std::uint32_t> counter{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return static_cast<std::uint32_t>(now) ^ (counter.fetch_add(1) * 0x9E3779B9u);
}

bool isStream(int fd) {
    int type = 0;
    socklen_t length = sizeof(type);
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == SOCK_STREAM;
}

}  // namespace

bool armFlowLabel(int scitag) {
    std::uint32_t label = 0;
    if (scitag != 0 && !scitagFlowLabel(scitag, 0, label)) {
        armedScitag.store(0);
        return false;
    }
    (void)realConnect();  // resolved now, before any thread connects
    armedScitag.store(scitag);
    return true;
}

FlowLabelCounts flowLabelCounts() {
    return {labelledCount.load(), refusedCount.load()};
}

// Labels one connection; returns connect()'s result and errno as the C library's would.
static int labelledConnect(ConnectFn real, int fd, const struct sockaddr* addr, socklen_t len,
                           int scitag) {
    sockaddr_in6 target;
    std::memcpy(&target, addr, sizeof(target));
    std::uint32_t label = 0;
    if (!scitagFlowLabel(scitag, entropy(), label)) return real(fd, addr, len);
    const int on = 1;
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_FLOWINFO_SEND, &on, sizeof(on)) != 0)
        return real(fd, addr, len);
    // sin6_flowinfo holds the traffic class too (bits 20-27): keep the caller's.
    target.sin6_flowinfo = htonl((ntohl(target.sin6_flowinfo) & ~0xFFFFFu) | label);
    int rc = real(fd, reinterpret_cast<const sockaddr*>(&target), len);
    if (rc == 0 || errno != EINVAL) {
        if (rc == 0 || errno == EINPROGRESS) labelledCount.fetch_add(1);
        return rc;
    }
    // EINVAL before anything happened: the namespace holds exclusive flow-label leases
    // (IPV6_FLOWLABEL_MGR) and this label is not one of this socket's. Never fail a copy
    // for its marking: connect as the caller asked, unlabelled, and say so once.
    const int off = 0;
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_FLOWINFO_SEND, &off, sizeof(off));
    if (refusedCount.fetch_add(1) == 0)
        fprintf(stderr,
                "xrdcp-wan: the kernel refused flow label 0x%05x (exclusive flow labels in use "
                "here); connecting unlabelled\n",
                label);
    return real(fd, addr, len);
}

}  // namespace wanio

namespace wanio {
namespace {

int markedConnect(ConnectFn real, int fd, const struct sockaddr* addr, socklen_t len) {
    const int scitag = armedScitag.load(std::memory_order_relaxed);
    if (scitag == 0 || !addr || len < static_cast<socklen_t>(sizeof(sockaddr_in6)) ||
        addr->sa_family != AF_INET6)
        return real(fd, addr, len);
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) || !isStream(fd)) return real(fd, addr, len);
    return labelledConnect(real, fd, addr, len, scitag);
}

}  // namespace
}  // namespace wanio

// The executable's connect(): see FlowLabelConnect.hh.
extern "C" int connect(int fd, const struct sockaddr* addr, socklen_t len) {
    wanio::ConnectFn real = wanio::realConnect();
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    // Every TCP connection of the program goes to the source: each asks for Fast Open.
    wanio::requestFastOpen(fd);
    const int rc = wanio::markedConnect(real, fd, addr, len);
    const int saved = errno;
    // The kernel's round trip on it sizes the reads in flight (PathRtt.hh).
    if ((rc == 0 || saved == EINPROGRESS) && wanio::isStream(fd)) wanio::rememberConnection(fd);
    errno = saved;
    return rc;
}
