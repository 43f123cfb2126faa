#include "RequestedPacing.hh"

#include <cstring>

#include "WanConfig.hh"

namespace wanio {

namespace {

constexpr const char* kKey = "wanio.pace";
constexpr std::uint64_t kMaxRequestedPacing = 64ull << 30;

// The value of the last "wanio.pace=" pair in `opaque`; false when there is none.
bool findAsked(const char* opaque, std::string& value) {
    if (opaque == nullptr) return false;
    const std::size_t keyLength = std::strlen(kKey);
    bool found = false;
    const char* pair = opaque;
    while (*pair != '\0') {
        const char* end = std::strchr(pair, '&');
        const std::size_t length = end ? static_cast<std::size_t>(end - pair) : std::strlen(pair);
        if (length > keyLength && std::strncmp(pair, kKey, keyLength) == 0 &&
            pair[keyLength] == '=') {
            value.assign(pair + keyLength + 1, length - keyLength - 1);
            found = true;
        }
        if (end == nullptr) break;
        pair = end + 1;
    }
    return found;
}

}  // namespace

PacingChoice choosePacing(const char* opaque, std::uint64_t sitePacing) {
    PacingChoice site{sitePacing, sitePacing > 0 ? "site" : "off"};
    std::string value;
    if (!findAsked(opaque, value)) return site;
    std::uint64_t asked = 0;
    if (!parseSize(value, asked) || asked < kMinRequestedPacing || asked > kMaxRequestedPacing) {
        site.why = "refused wanio.pace (a rate between 64k and 64g bytes/s), " + site.why;
        return site;
    }
    if (sitePacing > 0 && asked >= sitePacing) return PacingChoice{sitePacing, "site (asked more)"};
    return PacingChoice{asked, "asked"};
}

}  // namespace wanio
