#include "FastOpen.hh"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace wanio {

void requestFastOpen(int fd) {
    int type = 0;
    socklen_t length = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) return;
    int domain = 0;
    length = sizeof(domain);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 ||
        (domain != AF_INET && domain != AF_INET6))
        return;
    const int on = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &on, sizeof(on));
}

}  // namespace wanio
