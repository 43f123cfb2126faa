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
    int inflight = 16;  // concurrent chunk reads
    int streams = 0;    // TCP sub-streams for the data (from -S), 0 = the one connection
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
};

class TpcPull {
  public:
    explicit TpcPull(const TpcOptions& options) : options_(options) {}
    TpcResult run();

  private:
    TpcOptions options_;
};

}  // namespace wanio
