// The pacing a read asks for in its opaque: "wanio.pace=<bytes/s>" (a size as the
// directives take it: 2500000, 2400k, 12m). A push scheduler that gives each copy on a
// path its share of the path's bottleneck sends it with the source URL, so that the
// copies of one lane hold the rate the plan gave them instead of what TCP's RTT
// unfairness hands them. The site's own wanio.net.pacing stays the ceiling: a client can
// only slow its own connection, never speed it past what the site allows.
#pragma once

#include <cstdint>
#include <string>

namespace wanio {

// Lowest rate a read may ask for: below it a copy would outlast any transfer timeout.
constexpr std::uint64_t kMinRequestedPacing = 64u << 10;

struct PacingChoice {
    std::uint64_t rate = 0;  // bytes/s to apply; 0: leave the connection as it is
    std::string why;         // what decided it, for the trace ("site", "asked", or the refusal)
};

// Decides the pacing of one read from its opaque (may be null or empty; '&'-separated
// key=value pairs, XRootD's CGI) and the site's pacing (0 = off). An asked rate that is
// not a size, below kMinRequestedPacing or above 64g is refused (the site's pacing
// applies, and `why` names the refusal); an asked rate above the site's pacing is held to it.
PacingChoice choosePacing(const char* opaque, std::uint64_t sitePacing);

}  // namespace wanio
