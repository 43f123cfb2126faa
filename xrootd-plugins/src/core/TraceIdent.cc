#include "TraceIdent.hh"

#include <cstdlib>
#include <cstring>

namespace wanio {

int linkDescriptor(const char* tident) {
    if (!tident) return -1;
    const char* at = std::strchr(tident, '@');
    if (!at) return -1;
    // The last ':' before the '@' ends "<user>.<pid>" (a user name may hold a ':').
    const char* colon = nullptr;
    for (const char* p = tident; p < at; ++p)
        if (*p == ':') colon = p;
    if (!colon || colon + 1 == at) return -1;
    long fd = 0;
    for (const char* p = colon + 1; p < at; ++p) {
        if (*p < '0' || *p > '9') return -1;
        fd = fd * 10 + (*p - '0');
        if (fd > 1 << 24) return -1;
    }
    return static_cast<int>(fd);
}

}  // namespace wanio
