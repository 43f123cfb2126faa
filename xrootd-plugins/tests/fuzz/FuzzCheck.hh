// Property checks for the fuzz targets. libFuzzer only notices crashes, so a violated
// property aborts (ASan then reports it and libFuzzer saves the input as a crash
// artifact). Not assert(): the fuzz build may define NDEBUG.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond, detail)                                                               \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  %s\n", __FILE__, __LINE__, \
                         #cond, std::string(detail).c_str());                                  \
            std::abort();                                                                      \
        }                                                                                      \
    } while (0)
