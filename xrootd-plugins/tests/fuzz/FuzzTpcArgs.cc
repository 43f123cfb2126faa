// Fuzz target: xrdcp-wan's command line (parseTpcArgs). The input is the argument list
// with NUL bytes between the arguments, the one byte an argv string cannot hold.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "FuzzCheck.hh"
#include "tpc/TpcArgs.hh"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args;
    std::string current;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == '\0') {
            args.push_back(current);
            current.clear();
        } else {
            current += static_cast<char>(data[i]);
        }
    }
    if (size > 0) args.push_back(current);

    const wanio::TpcArgs a = wanio::parseTpcArgs(args);
    std::string input;
    for (const std::string& arg : args) input += "'" + arg + "' ";

    FUZZ_CHECK(a.exitCode == 0 || a.exitCode == 2, "exit status " + std::to_string(a.exitCode));
    if (a.exitCode != 0) {
        // The server reports the last "xrdcp-wan: ..." line as the copy's error.
        FUZZ_CHECK(a.message.empty() || a.message.rfind("xrdcp-wan: ", 0) == 0, a.message);
        return 0;
    }
    const wanio::TpcOptions& o = a.options;
    FUZZ_CHECK(a.message.empty() && !a.usage, "success with an error message: " + a.message);
    FUZZ_CHECK(o.inflight >= 1 && o.inflight <= 1024, "inflight out of range from " + input);
    FUZZ_CHECK(o.writerThreads >= 1 && o.writerThreads <= 64, "writers out of range: " + input);
    FUZZ_CHECK(o.streams >= 0 && o.streams <= 15, "streams out of range from " + input);
    FUZZ_CHECK(o.chunkSize >= 4096 && o.chunkSize <= (256u << 20) && o.chunkSize % 4096 == 0,
               "chunk size out of range from " + input);
    // No flow identifier, or one within the range (from --scitag or the source's scitag.flow).
    FUZZ_CHECK(o.scitag == 0 || (o.scitag >= 65 && o.scitag <= 65535), "scitag from " + input);
    // A malformed scitag.flow in the source URL marks nothing (and fails nothing).
    FUZZ_CHECK(!o.badUrlScitag || o.scitag == 0, "marked by a malformed scitag.flow: " + input);
    // Source and destination are two of the arguments, never an option's value. A source
    // read with its token is its argument without the rendezvous keys (SourceUrl.hh): the
    // same URL up to its '?', a token kept, no tpc.* parameter left.
    if (o.tokenPull) {
        const std::string base = o.source.substr(0, o.source.find('?') + 1);
        FUZZ_CHECK(std::any_of(args.begin(), args.end(),
                               [&](const std::string& arg) { return arg.rfind(base, 0) == 0; }),
                   "token pull of no argument: " + input);
        FUZZ_CHECK(o.source.find("authz=") != std::string::npos, "token pull without a token");
        const std::string query = o.source.substr(base.size());
        std::size_t at = 0;
        while (at <= query.size()) {
            std::size_t end = query.find_first_of("&\t", at);
            if (end == std::string::npos) end = query.size();
            FUZZ_CHECK(query.compare(at, 4, "tpc.") != 0, "rendezvous key left in " + o.source);
            at = end + 1;
        }
    } else {
        FUZZ_CHECK(std::find(args.begin(), args.end(), o.source) != args.end(), input);
    }
    FUZZ_CHECK(std::find(args.begin(), args.end(), o.destination) != args.end(), input);
    FUZZ_CHECK(o.source.empty() || o.source[0] != '-', "option taken as the source: " + input);
    FUZZ_CHECK(o.destination.empty() || o.destination[0] != '-', "option as destination: " + input);
    return 0;
}
