// xrdcp-wan: command line front end of TpcPull, invoked by the XRootD server as
//   <pgm> [fixed args] [-C cks] [-S streams] <source URL> <destination path>
#include <cstdio>
#include <string>
#include <vector>

#include "FlowLabelConnect.hh"
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
    // Messages about the marking go to stderr: the server takes its stdout's last
    // "<word>: <text>" line for the copy's error, and a copy never fails for its marking.
    if (options.badUrlScitag)
        fputs("xrdcp-wan: the source URL's scitag.flow is not 65..65535; not marked\n", stderr);
    if (options.scitag != 0 && !wanio::armFlowLabel(options.scitag))
        fprintf(stderr,
                "xrdcp-wan: scitag %d: its experiment (%d) is beyond the flow label's 9 bits; "
                "not marked\n",
                options.scitag, options.scitag >> 6);

    wanio::TpcResult result = wanio::TpcPull(options).run();
    if (result.exitCode != 0) {
        // The server keeps the last "<word>: <text>" line as the TPC error message.
        fprintf(stdout, "xrdcp-wan: %s\n", result.message.c_str());
        fflush(stdout);
        return result.exitCode;
    }
    if (options.verbose) {
        fprintf(stdout,
                "xrdcp-wan pulled %llu bytes in %.3f s, adler32 %08x, %d reads in flight, "
                "%llu chunks written direct, source read %s\n",
                static_cast<unsigned long long>(result.bytes), result.seconds, result.adler,
                result.readsInFlight, static_cast<unsigned long long>(result.directChunks),
                options.tokenPull ? "with the copy's token" : "by rendezvous");
        if (!result.inflightNote.empty())
            fprintf(stdout, "xrdcp-wan %s\n", result.inflightNote.c_str());
        const wanio::FlowLabelCounts marked = wanio::flowLabelCounts();
        if (options.scitag != 0)
            fprintf(stdout, "xrdcp-wan scitag %d: %lu connections labelled, %lu refused\n",
                    options.scitag, marked.labelled, marked.refused);
    }
    return 0;
}
