#include "TpcArgs.hh"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "FlowLabel.hh"
#include "SourceUrl.hh"
#include "core/WanConfig.hh"

namespace wanio {

namespace {

bool parseCount(const char* text, int lo, int hi, int& out) {
    char* end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (*end != '\0' || v < lo || v > hi) return false;
    out = static_cast<int>(v);
    return true;
}

TpcArgs failure(std::string message, bool usage = false) {
    TpcArgs result;
    result.exitCode = 2;
    result.message = std::move(message);
    result.usage = usage;
    return result;
}

}  // namespace

const char* tpcUsage() {
    return "usage: xrdcp-wan [--server] [--inflight N] [--bdp SIZE] [--chunk SIZE] "
           "[--rate BYTES/S] [--max-memory SIZE] [--odirect on|off] [--writers N] [--max-streams "
           "N] [--trace CSV] "
           "[--scitag N] "
           "[-C adler32[:source|print|<hex>]] [-S N] [-v] "
           "<source URL> <dest path>\n";
}

TpcArgs parseTpcArgs(const std::vector<std::string>& args) {
    TpcArgs result;
    TpcOptions& options = result.options;
    std::uint64_t bdp = 0;
    // -S N is the stream count the client asked for (its XrdCl SubStreamsPerChannel,
    // which counts every stream of a channel; 1 unless it asked for more). N >= 2 gets
    // N sub-streams, up to --max-streams; 1 keeps the pull on its one connection (as
    // stock `xrdcp -S 1` does not: it connects a sub-stream after the first reads and
    // moves all data to it, so on a long path the pull went through slow start twice).
    int maxStreams = 0;
    std::vector<std::string> positional;
    const std::size_t count = args.size();
    for (std::size_t i = 0; i < count; ++i) {
        const std::string& arg = args[i];
        // The option's value (the next argument, whatever it looks like), or nullptr
        // when the option is the last argument.
        auto value = [&]() -> const char* { return i + 1 < count ? args[++i].c_str() : nullptr; };
        auto missing = [](const char* name) {
            return failure(std::string("xrdcp-wan: option ") + name + " needs a value");
        };
        std::uint64_t size = 0;
        const char* v = nullptr;
        if (arg == "--server" || arg == "-s" || arg == "-f" || arg == "--force" || arg == "-N" ||
            arg == "--nopbar") {
            // Accepted for command-line compatibility with `xrdcp --server`.
        } else if (arg == "-v" || arg == "--verbose") {
            options.verbose = true;
        } else if (arg == "--inflight") {
            if (!(v = value())) return missing("--inflight");
            if (!parseCount(v, 1, 1024, options.inflight)) return failure("");
        } else if (arg == "--writers") {
            if (!(v = value())) return missing("--writers");
            if (!parseCount(v, 1, 64, options.writerThreads)) return failure("");
        } else if (arg == "-S" || arg == "--streams") {
            if (!(v = value())) return missing("-S");
            if (!parseCount(v, 0, 15, options.streams)) return failure("");
        } else if (arg == "--max-streams") {
            if (!(v = value())) return missing("--max-streams");
            if (!parseCount(v, 0, 15, maxStreams)) return failure("");
        } else if (arg == "--scitag") {
            if (!(v = value())) return missing("--scitag");
            if (!parseCount(v, 65, 65535, options.scitag))
                return failure("xrdcp-wan: bad --scitag (a flow identifier, 65 to 65535)");
        } else if (arg == "--trace") {
            if (!(v = value())) return missing("--trace");
            options.tracePath = v;
        } else if (arg == "-C" || arg == "--cksum") {
            if (!(v = value())) return missing("-C");
            options.checksum = v;
        } else if (arg == "--chunk") {
            if (!(v = value())) return missing("--chunk");
            if (!parseSize(v, size) || size < 4096 || size > (256u << 20) || size % 4096 != 0)
                return failure("xrdcp-wan: bad --chunk (multiple of 4k, at most 256m)");
            options.chunkSize = size;
        } else if (arg == "--rate") {
            if (!(v = value())) return missing("--rate");
            if (!parseSize(v, size) || size == 0)
                return failure("xrdcp-wan: bad --rate (the path's rate in bytes/s, e.g. 1192m)");
            options.pathRate = size;
        } else if (arg == "--max-memory") {
            if (!(v = value())) return missing("--max-memory");
            if (!parseSize(v, size) || size == 0)
                return failure("xrdcp-wan: bad --max-memory (a size, e.g. 1g)");
            options.maxMemory = size;
        } else if (arg == "--odirect") {
            if (!(v = value())) return missing("--odirect");
            const std::string onOff(v);
            if (onOff != "on" && onOff != "off")
                return failure("xrdcp-wan: bad --odirect (on|off)");
            options.directIo = onOff == "on";
        } else if (arg == "--bdp") {
            if (!(v = value())) return missing("--bdp");
            if (!parseSize(v, bdp)) return failure("xrdcp-wan: bad --bdp");
        } else if (!arg.empty() && arg[0] == '-') {
            return failure("xrdcp-wan: unknown option " + arg, true);
        } else {
            positional.push_back(arg);
        }
    }
    if (positional.size() != 2) return failure("", true);
    if (bdp > 0) {
        // Enough chunk reads in flight to keep the whole delay-bandwidth product moving.
        options.inflight = readsInFlightForBdp(bdp, options.chunkSize);
        options.pathRate = 0;  // a product given outright wins over one measured
    }
    options.streams = std::min(options.streams, maxStreams);
    if (options.streams < 2) options.streams = 0;
    options.source = pullSourceUrl(positional[0], options.tokenPull);
    options.destination = positional[1];
    // The copy's flow identifier, when the command line gives none: the source URL's
    // scitag.flow (the root:// convention), which reaches this URL through the server's
    // tpc.scgi. A malformed one is ignored, never a reason to refuse the copy.
    if (options.scitag == 0) {
        const int fromUrl = scitagFromUrl(options.source);
        if (fromUrl > 0) options.scitag = fromUrl;
        options.badUrlScitag = fromUrl < 0;
    }
    return result;
}

}  // namespace wanio
