// xrdcp-wan: command line front end of TpcPull, invoked by the XRootD server as
//   <pgm> [fixed args] [-C cks] [-S streams] <source URL> <destination path>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "TpcPull.hh"
#include "core/WanConfig.hh"

namespace {

void usage() {
    fprintf(stderr,
            "usage: xrdcp-wan [--server] [--inflight N] [--bdp SIZE] [--chunk SIZE] "
            "[--writers N] [--max-streams N] [--trace CSV] [-C adler32[:source|print|<hex>]] [-S "
            "N] [-v] "
            "<source URL> <dest path>\n");
}

bool parseCount(const char* text, int lo, int hi, int& out) {
    char* end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (*end != '\0' || v < lo || v > hi) return false;
    out = static_cast<int>(v);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    wanio::TpcOptions options;
    std::uint64_t bdp = 0;
    // The server passes -S 1 by default: one extra TCP sub-stream that XrdCl connects
    // after the first reads and then moves all data to, so on a long path the pull
    // goes through slow start twice. Sub-streams are used only up to --max-streams.
    int maxStreams = 0;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&](const char* name) -> const char* {
            if (i + 1 >= argc) {
                fprintf(stdout, "xrdcp-wan: option %s needs a value\n", name);
                std::exit(2);
            }
            return argv[++i];
        };
        std::uint64_t size = 0;
        if (arg == "--server" || arg == "-s" || arg == "-f" || arg == "--force" || arg == "-N" ||
            arg == "--nopbar") {
            // Accepted for command-line compatibility with `xrdcp --server`.
        } else if (arg == "-v" || arg == "--verbose") {
            options.verbose = true;
        } else if (arg == "--inflight") {
            if (!parseCount(value("--inflight"), 1, 1024, options.inflight)) return 2;
        } else if (arg == "--writers") {
            if (!parseCount(value("--writers"), 1, 64, options.writerThreads)) return 2;
        } else if (arg == "-S" || arg == "--streams") {
            if (!parseCount(value("-S"), 0, 15, options.streams)) return 2;
        } else if (arg == "--max-streams") {
            if (!parseCount(value("--max-streams"), 0, 15, maxStreams)) return 2;
        } else if (arg == "--trace") {
            options.tracePath = value("--trace");
        } else if (arg == "-C" || arg == "--cksum") {
            options.checksum = value("-C");
        } else if (arg == "--chunk") {
            if (!wanio::parseSize(value("--chunk"), size) || size < 4096 || size > (256u << 20) ||
                size % 4096 != 0) {
                fprintf(stdout, "xrdcp-wan: bad --chunk (multiple of 4k, at most 256m)\n");
                return 2;
            }
            options.chunkSize = size;
        } else if (arg == "--bdp") {
            if (!wanio::parseSize(value("--bdp"), bdp)) {
                fprintf(stdout, "xrdcp-wan: bad --bdp\n");
                return 2;
            }
        } else if (!arg.empty() && arg[0] == '-') {
            fprintf(stdout, "xrdcp-wan: unknown option %s\n", arg.c_str());
            usage();
            return 2;
        } else {
            positional.push_back(arg);
        }
    }
    if (positional.size() != 2) {
        usage();
        return 2;
    }
    if (bdp > 0) {
        // Enough chunk reads in flight to keep the whole delay-bandwidth product moving.
        options.inflight = wanio::readsInFlightForBdp(bdp, options.chunkSize);
    }
    options.streams = std::min(options.streams, maxStreams);
    options.source = positional[0];
    options.destination = positional[1];

    wanio::TpcResult result = wanio::TpcPull(options).run();
    if (result.exitCode != 0) {
        // The server keeps the last "<word>: <text>" line as the TPC error message.
        fprintf(stdout, "xrdcp-wan: %s\n", result.message.c_str());
        fflush(stdout);
        return result.exitCode;
    }
    if (options.verbose)
        fprintf(stdout, "xrdcp-wan pulled %llu bytes in %.3f s, adler32 %08x, %d reads in flight\n",
                static_cast<unsigned long long>(result.bytes), result.seconds, result.adler,
                options.inflight);
    return 0;
}
