// Configuration of the wanio plugin and a pure parser for its directives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wanio {

enum class ErrorPolicy { Unlink, Keep };
enum class TraceLevel { None, Info, Debug };

struct WanConfig {
    bool writeBehind = true;                       // wanio.wb
    std::size_t chunkSize = 8u << 20;              // wanio.wb.chunk
    int writerThreads = 8;                         // wanio.wb.threads
    int perFileWriters = 4;                        // wanio.wb.perfile
    int perFileQueue = 16;                         // wanio.wb.queue
    std::uint64_t maxMemory = 2ull << 30;          // wanio.wb.maxmem
    int waitSeconds = 120;                         // wanio.wb.wait
    bool directIo = false;                         // wanio.wb.odirect
    bool writeback = true;                         // wanio.wb.writeback
    bool fsyncOnClose = false;                     // wanio.wb.fsync
    bool preallocate = true;                       // wanio.wb.prealloc
    ErrorPolicy onError = ErrorPolicy::Unlink;     // wanio.wb.onerror
    ErrorPolicy incomplete = ErrorPolicy::Unlink;  // wanio.wb.incomplete
    bool checksum = true;                          // wanio.cks
    std::uint64_t readahead = 64ull << 20;         // wanio.rd.readahead
    int readaheadThreads = 4;                      // wanio.rd.threads
    std::uint64_t pacing = 0;                      // wanio.net.pacing (bytes/s, 0 = off)
    TraceLevel trace = TraceLevel::Info;           // wanio.trace
    std::string metricsFile;                       // wanio.metrics.file ("" = off)
    int metricsEvery = 15;                         // wanio.metrics.every (seconds)
};

// Outcome of parsing: either a config, or an error naming the offending line.
struct ConfigResult {
    bool ok = true;
    WanConfig config;
    int line = 0;         // 1-based line number of the error (0 for parms)
    std::string message;  // human readable error, empty when ok
};

// Parses every "wanio.*" directive in an XRootD configuration text. Lines of
// other components are ignored; unknown or malformed "wanio." lines are errors.
ConfigResult parseConfigText(const std::string& text, const WanConfig& base = WanConfig());

// Parses the "key=value ..." parameters given on the ofs.osslib line; keys are
// directive names without the "wanio." prefix (e.g. "wb.threads=4").
ConfigResult parseParms(const std::string& parms, const WanConfig& base = WanConfig());

// Parses a size with an optional k/m/g/t suffix (powers of 1024). False on error.
bool parseSize(const std::string& text, std::uint64_t& value);

// Chunk reads a pull must keep in flight to fill a path whose delay-bandwidth
// product is `bdp` bytes. A read is re-issued only after its last byte has
// arrived, so one read cycle lasts RTT + chunk / rate: the reads in flight must
// cover the BDP plus one chunk, i.e. ceil(bdp / chunk) + 1. Clamped to 1..1024.
int readsInFlightForBdp(std::uint64_t bdp, std::uint64_t chunk);

// One line per setting, for the server log.
std::string describeConfig(const WanConfig& config);

}  // namespace wanio
