// Command line of xrdcp-wan, parsed without side effects: the program's main() prints
// what this returns and exits, so the parser can be unit-tested and fuzzed on its own
// (tests/fuzz/FuzzTpcArgs.cc) without XrdCl or a process exit.
#pragma once

#include <string>
#include <vector>

#include "TpcPull.hh"

namespace wanio {

struct TpcArgs {
    int exitCode = 0;     // 0: options are valid; otherwise the program's exit status (2)
    std::string message;  // line for stdout when failing ("xrdcp-wan: ..."), may be empty
    bool usage = false;   // print tpcUsage() to stderr after `message`
    TpcOptions options;   // complete only when exitCode == 0
};

// Parses the arguments after the program name, as passed by the server:
//   [fixed args] [-C cks] [-S streams] <source URL> <destination path>
TpcArgs parseTpcArgs(const std::vector<std::string>& args);

// The usage text (one line, ending in a newline).
const char* tpcUsage();

}  // namespace wanio
