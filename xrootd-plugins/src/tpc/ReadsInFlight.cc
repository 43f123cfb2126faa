#include "ReadsInFlight.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/WanConfig.hh"

namespace wanio {

namespace {
constexpr double kQueueMargin = 1.25;
constexpr int kMostReads = 1024;  // as --inflight's own limit
}  // namespace

ReadsInFlight readsInFlightForPath(std::uint64_t rateBytesPerSecond, double rttSeconds,
                                   std::uint64_t chunk, int floorReads, std::uint64_t maxMemory) {
    ReadsInFlight plan;
    const int floor = std::clamp(floorReads, 1, kMostReads);
    plan.reads = floor;
    if (chunk == 0 || rateBytesPerSecond == 0 || !(rttSeconds > 0)) return plan;
    // In double: a rate of 2^60 B/s times seconds must not wrap.
    const double bdp = static_cast<double>(rateBytesPerSecond) * rttSeconds * kQueueMargin;
    const double capped = std::min(bdp, static_cast<double>(kMostReads) * chunk);
    const int wanted =
        std::max(readsInFlightForBdp(static_cast<std::uint64_t>(std::ceil(capped)), chunk), floor);
    plan.wantedBytes = static_cast<std::uint64_t>(wanted) * chunk;
    const std::uint64_t affordable = std::max<std::uint64_t>(maxMemory / chunk, 1);
    plan.reads = wanted;
    if (static_cast<std::uint64_t>(wanted) > affordable) {
        plan.reads = static_cast<int>(affordable);
        plan.memoryBound = true;
    }
    return plan;
}

std::string describeReadsInFlight(const ReadsInFlight& plan, std::uint64_t rateBytesPerSecond,
                                  double rttSeconds, std::uint64_t chunk) {
    char line[256];
    const double mib = 1024.0 * 1024.0;
    std::snprintf(line, sizeof line,
                  "reads in flight: %d x %.0f MiB (rate %.0f MiB/s, rtt %.1f ms)", plan.reads,
                  static_cast<double>(chunk) / mib, static_cast<double>(rateBytesPerSecond) / mib,
                  rttSeconds * 1e3);
    std::string text(line);
    if (plan.memoryBound) {
        std::snprintf(line, sizeof line,
                      "; the path needs %.0f MiB, the memory cap allows %.0f MiB: the copy runs "
                      "slower than the path",
                      static_cast<double>(plan.wantedBytes) / mib,
                      static_cast<double>(plan.reads) * static_cast<double>(chunk) / mib);
        text += line;
    }
    return text;
}

}  // namespace wanio
