// Pulls one remote file to a local path for XRootD third-party copy
// (`ofs.tpc pgm xrdcp-wan --server`): many chunk reads in flight to cover the
// path's delay-bandwidth product, parallel disk writes through the same
// WriteBehindFile as the server plugin, and an adler32 verified against the
// source and stored as the checksum xattr.
#pragma once

#include <cstdint>
#include <string>

namespace wanio {

struct TpcOptions {
    std::string source;       // root://host:port//path?cgi
    std::string destination;  // local path (the PFN given by the server)
    std::size_t chunkSize = 8u << 20;
    int inflight = 16;  // concurrent chunk reads (with pathRate: the fewest)
    // The site's path rate in bytes/s (--rate): when set, the reads in flight cover it times
    // the round trip measured to the source (ReadsInFlight.hh), within maxMemory.
    std::uint64_t pathRate = 0;
    std::uint64_t maxMemory = 1ull << 30;  // read buffers' limit (--max-memory)
    // Whole chunks written with O_DIRECT (--odirect, on by default): no copy into the page
    // cache and no dirty pages to flush; where the file system refuses it, buffered writes.
    bool directIo = true;
    int streams = 0;  // TCP sub-streams for the data (from -S), 0 = the one connection
    int writerThreads = 4;
    std::string checksum;  // -C value: "", "adler32", "adler32:source", "adler32:<hex>"
    bool verbose = false;
    std::string tracePath;  // when set, one CSV line per chunk read (timing diagnosis)
    // SciTags flow identifier whose IPv6 flow label the connections to the source carry
    // (FlowLabelConnect.hh): --scitag, else the source URL's scitag.flow; 0 = none.
    int scitag = 0;
    bool badUrlScitag = false;  // the source URL's scitag.flow was malformed (ignored)
    // The source is read with the copy's token, not through the rendezvous (SourceUrl.hh).
    bool tokenPull = false;
};

struct TpcResult {
    int exitCode = 0;     // 0 success; non-zero failure
    std::string message;  // error message when exitCode != 0
    std::uint64_t bytes = 0;
    std::uint32_t adler = 0;
    double seconds = 0;
    int readsInFlight = 0;           // what the pull kept in flight
    std::uint64_t directChunks = 0;  // chunks written with O_DIRECT
    std::string inflightNote;        // how that was decided, when from the path (for the log)
};

class TpcPull {
  public:
    explicit TpcPull(const TpcOptions& options) : options_(options) {}
    TpcResult run();

  private:
    TpcOptions options_;
};

}  // namespace wanio
