#include "LinkPacing.hh"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "XrdNet/XrdNetAddrInfo.hh"
#include "XrdSec/XrdSecEntity.hh"
#include "core/TraceIdent.hh"

namespace wanio {

namespace {

// Address and port of a socket address, IPv4-mapped IPv6 taken as IPv4.
struct Endpoint {
    int family = AF_UNSPEC;
    unsigned char address[16] = {};
    std::uint16_t port = 0;
};

Endpoint endpointOf(const sockaddr* sa) {
    Endpoint e;
    if (sa->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
        e.family = AF_INET;
        std::memcpy(e.address, &in->sin_addr, 4);
        e.port = in->sin_port;
    } else if (sa->sa_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
        e.port = in6->sin6_port;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            e.family = AF_INET;
            std::memcpy(e.address, in6->sin6_addr.s6_addr + 12, 4);
        } else {
            e.family = AF_INET6;
            std::memcpy(e.address, in6->sin6_addr.s6_addr, 16);
        }
    }
    return e;
}

bool sameEndpoint(const Endpoint& a, const Endpoint& b) {
    const std::size_t size = a.family == AF_INET ? 4 : 16;
    return a.family != AF_UNSPEC && a.family == b.family && a.port == b.port &&
           std::memcmp(a.address, b.address, size) == 0;
}

}  // namespace

bool paceClientLink(const XrdSecEntity* client, std::uint64_t bytesPerSecond, std::string& detail) {
    if (!client || !client->tident || !client->addrInfo || !client->addrInfo->SockAddr()) {
        detail = "no client connection details";
        return false;
    }
    const int fd = linkDescriptor(client->tident);
    if (fd < 0) {
        detail = "no descriptor in trace id";
        return false;
    }
    // Only the client's own connection: a TCP socket whose peer is the client.
    int type = 0;
    socklen_t typeLen = sizeof(type);
    sockaddr_storage peer{};
    socklen_t peerLen = sizeof(peer);
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeLen) != 0 || type != SOCK_STREAM ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLen) != 0 ||
        !sameEndpoint(endpointOf(reinterpret_cast<sockaddr*>(&peer)),
                      endpointOf(client->addrInfo->SockAddr()))) {
        detail = "descriptor " + std::to_string(fd) + " is not the client's connection";
        return false;
    }
    // 64-bit rates (above 4 GB/s) need a kernel that takes an 8-byte value; older ones
    // take 32 bits.
    std::uint64_t rate = bytesPerSecond;
    if (::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof(rate)) != 0) {
        unsigned int rate32 =
            static_cast<unsigned int>(std::min<std::uint64_t>(bytesPerSecond, UINT_MAX - 1));
        if (::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate32, sizeof(rate32)) != 0) {
            detail = std::string("setsockopt(SO_MAX_PACING_RATE): ") + std::strerror(errno);
            return false;
        }
    }
    detail = "fd=" + std::to_string(fd);
    return true;
}

}  // namespace wanio
