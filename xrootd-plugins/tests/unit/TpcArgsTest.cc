#include <gtest/gtest.h>

#include "core/WanConfig.hh"
#include "tpc/TpcArgs.hh"

using wanio::parseTpcArgs;
using wanio::TpcArgs;

TEST(TpcArgs, ParsesTheServersCommandLine) {
    // What the server runs for `ofs.tpc autorm pgm xrdcp-wan --server --inflight 16`
    // (localnet/xrootd.py), with the -C and -S it appends.
    TpcArgs a = parseTpcArgs({"--server", "--inflight", "16", "-C", "adler32:1a2b3c4d", "-S", "1",
                              "root://a.example:1094//data/f?x=1", "/srv/data/f"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_EQ(a.options.inflight, 16);
    EXPECT_EQ(a.options.checksum, "adler32:1a2b3c4d");
    // -S 1 (one stream) is the one connection, and --max-streams is 0 unless given.
    EXPECT_EQ(a.options.streams, 0);
    EXPECT_EQ(a.options.source, "root://a.example:1094//data/f?x=1");
    EXPECT_EQ(a.options.destination, "/srv/data/f");
    EXPECT_EQ(a.options.chunkSize, 8u << 20);
    EXPECT_EQ(a.options.writerThreads, 4);
    EXPECT_FALSE(a.options.verbose);
}

TEST(TpcArgs, TheServersStreamCountBecomesSubStreamsUpToTheCap) {
    auto streams = [](const char* asked, const char* cap) {
        TpcArgs a = parseTpcArgs({"--server", "--max-streams", cap, "-S", asked, "src", "dst"});
        EXPECT_EQ(a.exitCode, 0) << a.message;
        return a.options.streams;
    };
    // One stream asked: no sub-stream, the data stays on the one connection.
    EXPECT_EQ(streams("1", "15"), 0);
    EXPECT_EQ(streams("0", "15"), 0);
    // N >= 2: N sub-streams carry the data, up to --max-streams.
    EXPECT_EQ(streams("2", "15"), 2);
    EXPECT_EQ(streams("8", "15"), 8);
    EXPECT_EQ(streams("15", "15"), 15);
    EXPECT_EQ(streams("8", "4"), 4);
    // A cap of one stream is the one connection too.
    EXPECT_EQ(streams("8", "1"), 0);
    EXPECT_EQ(streams("8", "0"), 0);
}

TEST(TpcArgs, ParsesEveryOption) {
    TpcArgs a =
        parseTpcArgs({"-s",        "-f",         "--force",       "-N",      "--nopbar",  "-v",
                      "--writers", "9",          "--max-streams", "3",       "--streams", "5",
                      "--trace",   "/tmp/t.csv", "--cksum",       "adler32", "--chunk",   "1m",
                      "src",       "dst"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_TRUE(a.options.verbose);
    EXPECT_EQ(a.options.writerThreads, 9);
    EXPECT_EQ(a.options.streams, 3);
    EXPECT_EQ(a.options.tracePath, "/tmp/t.csv");
    EXPECT_EQ(a.options.checksum, "adler32");
    EXPECT_EQ(a.options.chunkSize, 1u << 20);
}

TEST(TpcArgs, BdpSetsTheReadsInFlightFromTheFinalChunkSize) {
    // --bdp is applied after all options, so a later --chunk still counts.
    TpcArgs a = parseTpcArgs({"--bdp", "375m", "--inflight", "2", "--chunk", "4m", "s", "d"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_EQ(a.options.inflight, wanio::readsInFlightForBdp(375ull << 20, 4u << 20));
    EXPECT_EQ(a.options.inflight, 95);
}

// The largest --bdp parseSize accepts asks for the most reads in flight, not one (the
// sum in readsInFlightForBdp wrapped around, found by tests/fuzz/FuzzSize.cc).
TEST(TpcArgs, HugeBdpGivesTheMostReadsInFlight) {
    TpcArgs a = parseTpcArgs({"--bdp", "18446744073709551615", "s", "d"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_EQ(a.options.inflight, 1024);
}

struct BadArgs {
    std::vector<std::string> args;
    const char* message;
    bool usage;
};

class TpcArgsBad : public ::testing::TestWithParam<BadArgs> {};

TEST_P(TpcArgsBad, FailsWithExitCodeTwo) {
    const BadArgs& p = GetParam();
    TpcArgs a = parseTpcArgs(p.args);
    EXPECT_EQ(a.exitCode, 2);
    EXPECT_EQ(a.message, p.message);
    EXPECT_EQ(a.usage, p.usage);
}

INSTANTIATE_TEST_SUITE_P(
    Args, TpcArgsBad,
    ::testing::Values(BadArgs{{}, "", true}, BadArgs{{"only-source"}, "", true},
                      BadArgs{{"a", "b", "c"}, "", true},
                      BadArgs{{"--inflight"}, "xrdcp-wan: option --inflight needs a value", false},
                      BadArgs{{"s", "d", "--streams"}, "xrdcp-wan: option -S needs a value", false},
                      BadArgs{{"s", "d", "--cksum"}, "xrdcp-wan: option -C needs a value", false},
                      // Count errors have always been silent (exit status 2 only).
                      BadArgs{{"--inflight", "0", "s", "d"}, "", false},
                      BadArgs{{"--inflight", "1025", "s", "d"}, "", false},
                      BadArgs{{"--writers", "x", "s", "d"}, "", false},
                      BadArgs{{"-S", "16", "s", "d"}, "", false},
                      BadArgs{{"--chunk", "5000", "s", "d"},
                              "xrdcp-wan: bad --chunk (multiple of 4k, at most 256m)",
                              false},
                      BadArgs{{"--chunk", "512m", "s", "d"},
                              "xrdcp-wan: bad --chunk (multiple of 4k, at most 256m)",
                              false},
                      BadArgs{{"--bdp", "fast", "s", "d"}, "xrdcp-wan: bad --bdp", false},
                      BadArgs{{"--bogus", "s", "d"}, "xrdcp-wan: unknown option --bogus", true}),
    [](const ::testing::TestParamInfo<BadArgs>& info) {
        return "case" + std::to_string(info.index);
    });

TEST(TpcArgs, ASourceWithATokenIsReadWithoutTheRendezvous) {
    // The destination's pull URL: the source CGI forwarded from tpc.scgi (tab-separated
    // as XRootD keeps it, or '&'), then the rendezvous keys it appends.
    TpcArgs a = parseTpcArgs({"--server",
                              "xroot://a.example:1094//data/f?authz=Bearer%20abc\tscitag.flow=196"
                              "&tpc.key=k1&tpc.org=srcnet.1:2@b.example",
                              "/srv/data/f"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_TRUE(a.options.tokenPull);
    EXPECT_EQ(a.options.source,
              "xroot://a.example:1094//data/f?authz=Bearer%20abc&scitag.flow=196");
    EXPECT_EQ(a.options.scitag, 196);
}

TEST(TpcArgs, ASourceWithoutATokenKeepsItsRendezvous) {
    for (const char* url : {"xroot://a.example:1094//data/f?tpc.key=k1&tpc.org=o",
                            "xroot://a.example:1094//data/f?authz=&tpc.key=k1",
                            "xroot://a.example:1094//data/f?xauthz=Bearer%20abc&tpc.key=k1",
                            "xroot://a.example:1094//data/f"}) {
        TpcArgs a = parseTpcArgs({"--server", url, "/srv/data/f"});
        ASSERT_EQ(a.exitCode, 0) << a.message;
        EXPECT_FALSE(a.options.tokenPull) << url;
        EXPECT_EQ(a.options.source, url);
    }
}

TEST(TpcArgs, ThePathRateSizesTheReadsFromTheMeasuredRoundTrip) {
    // What the deployed sites run: --inflight is then the fewest reads, the rate and the
    // round trip the pull measures decide the rest (ReadsInFlight.hh).
    TpcArgs a = parseTpcArgs(
        {"--server", "--inflight", "16", "--rate", "1192m", "--max-memory", "2g", "src", "dst"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_EQ(a.options.pathRate, 1192ull << 20);
    EXPECT_EQ(a.options.maxMemory, 2ull << 30);
    EXPECT_EQ(a.options.inflight, 16);
    // A product given outright wins: no measuring.
    TpcArgs b = parseTpcArgs({"--rate", "1192m", "--bdp", "375m", "src", "dst"});
    ASSERT_EQ(b.exitCode, 0) << b.message;
    EXPECT_EQ(b.options.pathRate, 0u);
    EXPECT_EQ(b.options.inflight, 48);
}

TEST(TpcArgs, ABadRateOrMemoryCapIsRefusedByName) {
    for (const char* bad : {"0", "fast", "-1", "1x"}) {
        TpcArgs a = parseTpcArgs({"--rate", bad, "src", "dst"});
        EXPECT_EQ(a.exitCode, 2) << bad;
        EXPECT_NE(a.message.find("--rate"), std::string::npos) << a.message;
        TpcArgs m = parseTpcArgs({"--max-memory", bad, "src", "dst"});
        EXPECT_EQ(m.exitCode, 2) << bad;
        EXPECT_NE(m.message.find("--max-memory"), std::string::npos) << m.message;
    }
    EXPECT_NE(parseTpcArgs({"src", "dst", "--rate"}).message.find("--rate needs a value"),
              std::string::npos);
}

TEST(TpcArgs, WholeChunksAreWrittenDirectUnlessSwitchedOff) {
    EXPECT_TRUE(parseTpcArgs({"src", "dst"}).options.directIo);
    EXPECT_FALSE(parseTpcArgs({"--odirect", "off", "src", "dst"}).options.directIo);
    EXPECT_TRUE(parseTpcArgs({"--odirect", "on", "src", "dst"}).options.directIo);
    TpcArgs bad = parseTpcArgs({"--odirect", "yes", "src", "dst"});
    EXPECT_EQ(bad.exitCode, 2);
    EXPECT_NE(bad.message.find("--odirect"), std::string::npos) << bad.message;
}
