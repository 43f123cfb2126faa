// Fuzz target: sizes and rates ("119m" for wanio.net.pacing, "375m" for --bdp,
// wanio.wb.chunk ...) through parseSize and the wanio.net.pacing directive, and the
// reads in flight derived from --bdp (readsInFlightForBdp). Each is compared with a
// straightforward reference written with 128-bit arithmetic.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "FuzzCheck.hh"
#include "core/WanConfig.hh"

namespace {

using u128 = unsigned __int128;

// The documented syntax: decimal digits, then nothing or one of k m g t (either case).
bool referenceSize(const std::string& text, std::uint64_t& value) {
    std::size_t i = 0;
    u128 n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        n = n * 10 + static_cast<unsigned>(text[i] - '0');
        if (n > UINT64_MAX) n = u128(UINT64_MAX) + 1;  // stays "too big", cannot wrap
        ++i;
    }
    if (i == 0) return false;
    const std::string suffix = text.substr(i);
    u128 mult = 1;
    if (suffix == "k" || suffix == "K")
        mult = u128(1) << 10;
    else if (suffix == "m" || suffix == "M")
        mult = u128(1) << 20;
    else if (suffix == "g" || suffix == "G")
        mult = u128(1) << 30;
    else if (suffix == "t" || suffix == "T")
        mult = u128(1) << 40;
    else if (!suffix.empty())
        return false;
    if (n > UINT64_MAX || n * mult > UINT64_MAX) return false;
    value = static_cast<std::uint64_t>(n * mult);
    return true;
}

int referenceReads(std::uint64_t bdp, std::uint64_t chunk) {
    if (chunk == 0) return 1;
    const u128 n = (u128(bdp) + chunk - 1) / chunk + 1;
    return n > 1024 ? 1024 : static_cast<int>(n);
}

bool isOneWord(const std::string& text) {
    if (text.empty() || text[0] == '#' || text.back() == '\\') return false;
    for (char ch : text)
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f')
            return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);

    std::uint64_t got = 0, want = 0;
    const bool ok = wanio::parseSize(text, got);
    const bool wantOk = referenceSize(text, want);
    FUZZ_CHECK(ok == wantOk, "parseSize('" + text + "') accepted=" + std::to_string(ok));
    if (ok) FUZZ_CHECK(got == want, "parseSize('" + text + "') = " + std::to_string(got));

    // The pacing directive: "off" or a rate of 1m..64g bytes per second.
    if (isOneWord(text)) {
        const wanio::ConfigResult r = wanio::parseConfigText("wanio.net.pacing " + text + "\n");
        const bool inRange = wantOk && want >= (1u << 20) && want <= (64ull << 30);
        FUZZ_CHECK(r.ok == (text == "off" || inRange), "wanio.net.pacing " + text);
        if (r.ok) FUZZ_CHECK(r.config.pacing == (text == "off" ? 0 : want), text);
    }

    // --bdp: the first 16 bytes as a delay-bandwidth product and a chunk size.
    if (size >= 16) {
        std::uint64_t bdp = 0, chunk = 0;
        std::memcpy(&bdp, data, 8);
        std::memcpy(&chunk, data + 8, 8);
        const int reads = wanio::readsInFlightForBdp(bdp, chunk);
        FUZZ_CHECK(reads == referenceReads(bdp, chunk),
                   "readsInFlightForBdp(" + std::to_string(bdp) + ", " + std::to_string(chunk) +
                       ") = " + std::to_string(reads));
    }
    return 0;
}
