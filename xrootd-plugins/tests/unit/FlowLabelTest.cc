#include "tpc/FlowLabel.hh"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "tpc/TpcArgs.hh"

using wanio::flowLabelMeaning;
using wanio::kFlowLabelMeaningMask;
using wanio::scitagFlowLabel;
using wanio::scitagFromUrl;

namespace {

std::uint32_t label(int scitag, std::uint32_t entropy = 0) {
    std::uint32_t out = 0xFFFFFFFFu;
    EXPECT_TRUE(scitagFlowLabel(scitag, entropy, out)) << scitag;
    return out;
}

}  // namespace

TEST(FlowLabel, TheLayoutsBitsForKnownFlows) {
    // Experiment 42 (0b000101010) reversed over 9 bits is 0b010101000 (168), at bits 17-9;
    // activity 2 at bits 7-2: 168 << 9 | 2 << 2.
    EXPECT_EQ(label(42 << 6 | 2), 0x15008u);
    EXPECT_EQ(label(2690), 0x15008u);
    // Experiment 1 is the highest meaning bit (17), activity 1 the lowest (2).
    EXPECT_EQ(label(1 << 6 | 1), (1u << 17) | (1u << 2));
    // Experiment 256 (bit 8) lands at bit 9, and activity 63 fills bits 7-2.
    EXPECT_EQ(label(256 << 6 | 63), (1u << 9) | 0xFCu);
    // The largest experiment the layout holds: all nine meaning bits.
    EXPECT_EQ(label(511 << 6), 0x3FE00u);
}

TEST(FlowLabel, EntropyFillsOnlyTheFiveOtherBits) {
    // Each entropy bit lands in its place: bits 0, 1, 8, 18, 19.
    const std::uint32_t places[5] = {1u << 0, 1u << 1, 1u << 8, 1u << 18, 1u << 19};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(label(2690, 1u << i), 0x15008u | places[i]) << i;
    EXPECT_EQ(label(2690, 0x1F), 0x15008u | 0xC0103u);
    // Bits beyond the fifth are not used, and the meaning never changes.
    std::set<std::uint32_t> seen;
    for (std::uint32_t e = 0; e < 1024; ++e) {
        const std::uint32_t l = label(2690, e);
        EXPECT_EQ(l & kFlowLabelMeaningMask, 0x15008u);
        EXPECT_LE(l, 0xFFFFFu);
        seen.insert(l);
    }
    EXPECT_EQ(seen.size(), 32u);
    EXPECT_EQ(kFlowLabelMeaningMask | 0xC0103u, 0xFFFFFu);
    EXPECT_EQ(kFlowLabelMeaningMask & 0xC0103u, 0u);
}

TEST(FlowLabel, ReadsBackTheExperimentAndActivity) {
    for (int scitag : {65, 2690, 2694, 511 << 6 | 63, 300 << 6 | 17}) {
        int experiment = -1, activity = -1;
        flowLabelMeaning(label(scitag, 0x1F), experiment, activity);
        EXPECT_EQ(experiment, scitag >> 6);
        EXPECT_EQ(activity, scitag & 63);
    }
}

TEST(FlowLabel, NoLabelOutsideTheRangeOrBeyondNineExperimentBits) {
    std::uint32_t out = 7;
    for (int scitag : {0, 1, 64, 65536, -1, 512 << 6, 1023 << 6 | 63, 65535}) {
        EXPECT_FALSE(scitagFlowLabel(scitag, 0, out)) << scitag;
        EXPECT_EQ(out, 7u);
    }
}

TEST(FlowLabel, ScitagFromTheSourceUrlsOpaque) {
    EXPECT_EQ(scitagFromUrl("root://h:1094//f"), 0);
    EXPECT_EQ(scitagFromUrl("root://h:1094//f?authz=Bearer%20x"), 0);
    EXPECT_EQ(scitagFromUrl("root://h:1094//f?scitag.flow=2690"), 2690);
    // As the server builds the pull's source URL: tpc.scgi's keys first, then its own.
    EXPECT_EQ(scitagFromUrl("xroot://[fd00::1]:1094//f?scitag.flow=2694&tpc.key=k&tpc.org=o"),
              2694);
    EXPECT_EQ(scitagFromUrl("xroot://h//f?&tpc.key=k&scitag.flow=65"), 65);
    EXPECT_EQ(scitagFromUrl("xroot://h//f?a=1\tscitag.flow=65535"), 65535);
    // Only the key itself, not one that ends with it; the first one counts.
    EXPECT_EQ(scitagFromUrl("root://h//f?xscitag.flow=2690"), 0);
    EXPECT_EQ(scitagFromUrl("root://h//f?scitag.flow=70&scitag.flow=80"), 70);
    // Present but not a flow identifier.
    for (const char* bad :
         {"root://h//f?scitag.flow=", "root://h//f?scitag.flow=64", "root://h//f?scitag.flow=65536",
          "root://h//f?scitag.flow=2690x", "root://h//f?scitag.flow=-70",
          "root://h//f?scitag.flow=0000070", "root://h//f?scitag.flow=99999999999999999999"})
        EXPECT_EQ(scitagFromUrl(bad), -1) << bad;
}

TEST(FlowLabel, TheCommandLineWinsOverTheSourceUrl) {
    using wanio::parseTpcArgs;
    wanio::TpcArgs a = parseTpcArgs({"--server", "root://h//f?scitag.flow=2690", "/d"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_EQ(a.options.scitag, 2690);
    a = parseTpcArgs({"--scitag", "2694", "root://h//f?scitag.flow=2690", "/d"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_EQ(a.options.scitag, 2694);
    // A malformed one in the URL is ignored (the copy goes on, unmarked) ...
    a = parseTpcArgs({"root://h//f?scitag.flow=1", "/d"});
    ASSERT_EQ(a.exitCode, 0) << a.message;
    EXPECT_EQ(a.options.scitag, 0);
    EXPECT_TRUE(a.options.badUrlScitag);
    // ... a bad one on the command line is an error, as any other option's.
    a = parseTpcArgs({"--scitag", "64", "s", "d"});
    EXPECT_EQ(a.exitCode, 2);
    EXPECT_EQ(a.message, "xrdcp-wan: bad --scitag (a flow identifier, 65 to 65535)");
    a = parseTpcArgs({"s", "d", "--scitag"});
    EXPECT_EQ(a.message, "xrdcp-wan: option --scitag needs a value");
    a = parseTpcArgs({"s", "d"});
    EXPECT_EQ(a.options.scitag, 0);
    EXPECT_FALSE(a.options.badUrlScitag);
}
