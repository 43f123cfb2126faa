// xrdcp-wan: command line front end of TpcPull, invoked by the XRootD server as
//   <pgm> [fixed args] [-C cks] [-S streams] <source URL> <destination path>
#include <cstdio>
#include <string>
#include <vector>

#include "TpcArgs.hh"
#include "TpcPull.hh"

int main(int argc, char** argv) {
    // argc can be 0 (an exec with an empty argv): then there are no arguments at all.
    std::vector<std::string> words;
    for (int i = 1; i < argc; ++i) words.push_back(argv[i]);
    const wanio::TpcArgs args = wanio::parseTpcArgs(words);
    if (args.exitCode != 0) {
        if (!args.message.empty()) fprintf(stdout, "%s\n", args.message.c_str());
        if (args.usage) fputs(wanio::tpcUsage(), stderr);
        return args.exitCode;
    }
    const wanio::TpcOptions& options = args.options;

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
