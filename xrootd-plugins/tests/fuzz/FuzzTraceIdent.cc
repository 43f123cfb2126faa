// Fuzz target: the link descriptor in a client's trace identifier (linkDescriptor),
// "<user>.<pid>:<fd>@<host>", which decides which socket wanio.net.pacing touches. It
// is a C string from XRootD, so the input is read up to its first NUL byte.
#include <cstddef>
#include <cstdint>
#include <string>

#include "FuzzCheck.hh"
#include "core/TraceIdent.hh"

namespace {

// The digits between the last ':' before the first '@' and that '@', at most 1 << 24.
int reference(const std::string& t) {
    const std::size_t at = t.find('@');
    if (at == std::string::npos || at == 0) return -1;
    const std::size_t colon = t.rfind(':', at - 1);
    if (colon == std::string::npos || colon + 1 == at) return -1;
    std::uint64_t fd = 0;
    for (std::size_t i = colon + 1; i < at; ++i) {
        if (t[i] < '0' || t[i] > '9') return -1;
        fd = fd * 10 + static_cast<unsigned>(t[i] - '0');
        if (fd > (1u << 24)) return -1;
    }
    return static_cast<int>(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    const std::string tident = bytes.substr(0, bytes.find('\0'));
    const int fd = wanio::linkDescriptor(bytes.c_str());
    FUZZ_CHECK(fd == reference(tident), "linkDescriptor('" + tident + "') = " + std::to_string(fd));
    return 0;
}
