// How many chunk reads a pull keeps in flight, from the path it runs on: the site's path
// rate (`xrdcp-wan --rate`, what the site's pacing is set to) times the round trip the
// pull measures to the source itself (its stat of the source, one request and its answer),
// so a site whose paths run from 5 ms to 300 ms needs no per-path setting. Bounded by the
// memory the pull may use for its read buffers (`--max-memory`): a longer or faster path
// than that memory covers runs at what it allows, and says so.
#pragma once

#include <cstdint>
#include <string>

namespace wanio {

struct ReadsInFlight {
    int reads = 1;  // chunk reads to keep in flight
    std::uint64_t wantedBytes =
        0;                     // what covering the path would need (rate x RTT x margin + a chunk)
    bool memoryBound = false;  // fewer reads than the path needs: the memory cap decided
};

// `floorReads`: the fewest reads in flight whatever the path (the command line's --inflight).
// `rttSeconds` <= 0 or `rateBytesPerSecond` == 0: the floor. The product is taken with a
// quarter more than the measured RTT, for the queue a full path adds to it.
ReadsInFlight readsInFlightForPath(std::uint64_t rateBytesPerSecond, double rttSeconds,
                                   std::uint64_t chunk, int floorReads, std::uint64_t maxMemory);

// One line for the site's log and the copy's record, e.g. "reads in flight: 58 x 8 MiB
// (rate 1192 MiB/s, rtt 300.4 ms)", with what the memory cap cut when it did.
std::string describeReadsInFlight(const ReadsInFlight& plan, std::uint64_t rateBytesPerSecond,
                                  double rttSeconds, std::uint64_t chunk);

}  // namespace wanio
