#include <gtest/gtest.h>

#include "core/WanConfig.hh"

using wanio::ConfigResult;
using wanio::parseConfigText;
using wanio::parseParms;

TEST(WanConfig, EmptyTextGivesDefaults) {
    ConfigResult r = parseConfigText("");
    ASSERT_TRUE(r.ok) << r.message;
    EXPECT_TRUE(r.config.writeBehind);
    EXPECT_EQ(r.config.chunkSize, 8u << 20);
    EXPECT_EQ(r.config.writerThreads, 8);
    EXPECT_EQ(r.config.maxMemory, 2ull << 30);
    EXPECT_EQ(r.config.onError, wanio::ErrorPolicy::Unlink);
}

TEST(WanConfig, ParsesEveryDirective) {
    const char* text =
        "all.export /\n"
        "xrootd.chksum adler32\n"
        "wanio.wb on\n"
        "wanio.wb.chunk 4m\n"
        "wanio.wb.threads 3\n"
        "wanio.wb.perfile 2\n"
        "wanio.wb.queue 9\n"
        "wanio.wb.maxmem 1g\n"
        "wanio.wb.wait 7\n"
        "wanio.wb.odirect on\n"
        "wanio.wb.writeback off\n"
        "wanio.wb.fsync close\n"
        "wanio.wb.prealloc off\n"
        "wanio.wb.onerror keep\n"
        "wanio.wb.incomplete keep\n"
        "wanio.cks off\n"
        "wanio.rd.readahead 0\n"
        "wanio.rd.threads 0\n"
        "wanio.net.pacing 150m\n"
        "wanio.metrics.file /var/lib/prometheus/node-exporter/wanio.prom\n"
        "wanio.metrics.every 5\n"
        "wanio.trace debug   # trailing comment\n";
    ConfigResult r = parseConfigText(text);
    ASSERT_TRUE(r.ok) << r.message;
    const wanio::WanConfig& c = r.config;
    EXPECT_EQ(c.chunkSize, 4u << 20);
    EXPECT_EQ(c.writerThreads, 3);
    EXPECT_EQ(c.perFileWriters, 2);
    EXPECT_EQ(c.perFileQueue, 9);
    EXPECT_EQ(c.maxMemory, 1ull << 30);
    EXPECT_EQ(c.waitSeconds, 7);
    EXPECT_TRUE(c.directIo);
    EXPECT_FALSE(c.writeback);
    EXPECT_TRUE(c.fsyncOnClose);
    EXPECT_FALSE(c.preallocate);
    EXPECT_EQ(c.onError, wanio::ErrorPolicy::Keep);
    EXPECT_EQ(c.incomplete, wanio::ErrorPolicy::Keep);
    EXPECT_FALSE(c.checksum);
    EXPECT_EQ(c.readahead, 0u);
    EXPECT_EQ(c.readaheadThreads, 0);
    EXPECT_EQ(c.pacing, 150ull << 20);
    EXPECT_EQ(c.metricsFile, "/var/lib/prometheus/node-exporter/wanio.prom");
    EXPECT_EQ(c.metricsEvery, 5);
    EXPECT_EQ(c.trace, wanio::TraceLevel::Debug);
}

TEST(WanConfig, ContinuationLinesAndCommentsAreHandled) {
    ConfigResult r = parseConfigText("# wanio.bogus 1\nwanio.wb.threads \\\n  5\nwanio.wb off\n");
    ASSERT_TRUE(r.ok) << r.message;
    EXPECT_EQ(r.config.writerThreads, 5);
    EXPECT_FALSE(r.config.writeBehind);
}

struct BadLine {
    const char* text;
    int line;
    const char* fragment;
};

class WanConfigBad : public ::testing::TestWithParam<BadLine> {};

TEST_P(WanConfigBad, RejectsAndNamesTheLine) {
    const BadLine& p = GetParam();
    ConfigResult r = parseConfigText(p.text);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.line, p.line);
    EXPECT_NE(r.message.find(p.fragment), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("line " + std::to_string(p.line)), std::string::npos) << r.message;
}

INSTANTIATE_TEST_SUITE_P(
    Lines, WanConfigBad,
    ::testing::Values(BadLine{"all.export /\nwanio.bogus 1\n", 2, "unknown directive wanio.bogus"},
                      BadLine{"wanio.wb maybe\n", 1, "on|off"},
                      BadLine{"\n\nwanio.wb.chunk 5000\n", 3, "multiple of 4k"},
                      BadLine{"wanio.wb.chunk 512m\n", 1, "256m"},
                      BadLine{"wanio.wb.chunk 8x\n", 1, "wanio.wb.chunk"},
                      BadLine{"wanio.wb.threads 0\n", 1, "1..256"},
                      BadLine{"wanio.wb.threads 1000\n", 1, "1..256"},
                      BadLine{"wanio.wb.threads two\n", 1, "1..256"},
                      BadLine{"wanio.wb.threads\n", 1, "exactly one value"},
                      BadLine{"wanio.wb.threads 2 3\n", 1, "exactly one value"},
                      BadLine{"wanio.wb.maxmem 10k\n", 1, "1m and 1t"},
                      BadLine{"wanio.wb.wait -1\n", 1, "1..86400"},
                      BadLine{"wanio.wb.fsync always\n", 1, "none|close"},
                      BadLine{"wanio.wb.onerror delete\n", 1, "unlink|keep"},
                      BadLine{"wanio.cks md5\n", 1, "adler32|off"},
                      BadLine{"wanio.rd.readahead 5g\n", 1, "4g"},
                      BadLine{"wanio.rd.threads 65\n", 1, "0..64"},
                      BadLine{"wanio.net.pacing 10k\n", 1, "between 1m and 64g"},
                      BadLine{"wanio.net.pacing fast\n", 1, "between 1m and 64g"},
                      BadLine{"wanio.rd.threads -1\n", 1, "0..64"},
                      BadLine{"wanio.trace loud\n", 1, "none|info|debug"}),
    [](const ::testing::TestParamInfo<BadLine>& info) {
        return "case" + std::to_string(info.index);
    });

TEST(WanConfig, MaxMemoryBelowChunkIsRejected) {
    ConfigResult r = parseConfigText("wanio.wb.chunk 16m\nwanio.wb.maxmem 8m\n");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.message.find("maxmem"), std::string::npos);
}

TEST(WanConfig, ParmsOverrideFileValues) {
    ConfigResult file = parseConfigText("wanio.wb.threads 3\n");
    ASSERT_TRUE(file.ok);
    ConfigResult r = parseParms("wb.threads=6 wanio.wb.queue=4", file.config);
    ASSERT_TRUE(r.ok) << r.message;
    EXPECT_EQ(r.config.writerThreads, 6);
    EXPECT_EQ(r.config.perFileQueue, 4);
}

TEST(WanConfig, BadParmsAreRejected) {
    EXPECT_FALSE(parseParms("threads").ok);
    EXPECT_FALSE(parseParms("=4").ok);
    EXPECT_FALSE(parseParms("wb.threads=abc").ok);
    EXPECT_FALSE(parseParms("nosuch=1").ok);
}

TEST(WanConfig, SizesAcceptUnitSuffixes) {
    std::uint64_t v = 0;
    ASSERT_TRUE(wanio::parseSize("3k", v));
    EXPECT_EQ(v, 3072u);
    ASSERT_TRUE(wanio::parseSize("2G", v));
    EXPECT_EQ(v, 2ull << 30);
    ASSERT_TRUE(wanio::parseSize("17", v));
    EXPECT_EQ(v, 17u);
    EXPECT_FALSE(wanio::parseSize("", v));
    EXPECT_FALSE(wanio::parseSize("-1", v));
    EXPECT_FALSE(wanio::parseSize("1kb", v));
    EXPECT_FALSE(wanio::parseSize("99999999999999999999t", v));
}

// Found by tests/fuzz/FuzzSize.cc: "6\0n\x06" was taken as 6. The plugin reads the config
// file itself, so a value with a NUL byte in it was accepted up to that byte instead of
// stopping the server as a malformed value.
TEST(WanConfig, ValuesWithANulByteAreRejected) {
    using namespace std::string_literals;
    std::uint64_t v = 0;
    EXPECT_FALSE(wanio::parseSize("6\0n\x06"s, v));
    EXPECT_FALSE(wanio::parseSize("8m\0"s, v));
    ConfigResult chunk = parseConfigText("wanio.wb.chunk 8m\0junk\n"s);
    EXPECT_FALSE(chunk.ok);
    EXPECT_NE(chunk.message.find("wanio.wb.chunk"), std::string::npos) << chunk.message;
    ConfigResult threads = parseConfigText("wanio.wb.threads 5\0x\n"s);
    EXPECT_FALSE(threads.ok);
    EXPECT_NE(threads.message.find("1..256"), std::string::npos) << threads.message;
    EXPECT_FALSE(parseParms("wb.threads=5\0x"s).ok);
}

TEST(WanConfig, ReadsInFlightCoverTheBdpPlusOneChunk) {
    const std::uint64_t chunk = 8u << 20;
    // 1 Gbit/s x 300 ms = 37.5 MB: 4.47 chunks, rounded up, plus the chunk arriving.
    EXPECT_EQ(wanio::readsInFlightForBdp(37500000, chunk), 6);
    EXPECT_EQ(wanio::readsInFlightForBdp(2 * chunk, chunk), 3);
    EXPECT_EQ(wanio::readsInFlightForBdp(1, chunk), 2);
    EXPECT_EQ(wanio::readsInFlightForBdp(0, chunk), 1);
    EXPECT_EQ(wanio::readsInFlightForBdp(1ull << 50, chunk), 1024);
    EXPECT_EQ(wanio::readsInFlightForBdp(1000, 0), 1);
}

// Found by tests/fuzz/FuzzSize.cc: bdp + chunk - 1 wrapped around for a bdp near 2^64 and
// the pull got 1 read in flight instead of the most (1024).
TEST(WanConfig, ReadsInFlightForAHugeBdpDoNotWrap) {
    EXPECT_EQ(wanio::readsInFlightForBdp(18446744072479977600ull, 792633534417144575ull), 25);
    EXPECT_EQ(wanio::readsInFlightForBdp(UINT64_MAX, 8u << 20), 1024);
    EXPECT_EQ(wanio::readsInFlightForBdp(UINT64_MAX, 1), 1024);
    EXPECT_EQ(wanio::readsInFlightForBdp(UINT64_MAX, UINT64_MAX), 2);
    EXPECT_EQ(wanio::readsInFlightForBdp(1023 * 4096ull, 4096), 1024);
    EXPECT_EQ(wanio::readsInFlightForBdp(1022 * 4096ull + 1, 4096), 1024);
    EXPECT_EQ(wanio::readsInFlightForBdp(1022 * 4096ull, 4096), 1023);
}

TEST(WanConfig, MetricsFileIsOffOrAnAbsolutePath) {
    EXPECT_TRUE(parseConfigText("").config.metricsFile.empty());
    EXPECT_EQ(parseConfigText("").config.metricsEvery, 15);
    ConfigResult off = parseConfigText("wanio.metrics.file /m.prom\nwanio.metrics.file off\n");
    ASSERT_TRUE(off.ok) << off.message;
    EXPECT_TRUE(off.config.metricsFile.empty());
    EXPECT_EQ(parseParms("metrics.file=/srv/m.prom").config.metricsFile, "/srv/m.prom");
    for (const char* bad : {"wanio.metrics.file m.prom", "wanio.metrics.file /a\\b",
                            "wanio.metrics.every 0", "wanio.metrics.every 3601"}) {
        ConfigResult r = parseConfigText(std::string(bad) + "\n");
        EXPECT_FALSE(r.ok) << bad;
        EXPECT_EQ(r.line, 1) << bad;
    }
}
