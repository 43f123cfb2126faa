#include <gtest/gtest.h>

#include "core/RequestedPacing.hh"

using wanio::choosePacing;
using wanio::PacingChoice;

TEST(RequestedPacing, NoOpaqueKeepsTheSitePacing) {
    EXPECT_EQ(choosePacing(nullptr, 12500000).rate, 12500000u);
    EXPECT_EQ(choosePacing("", 12500000).why, "site");
    EXPECT_EQ(choosePacing("authz=abc&oss.asize=9", 0).rate, 0u);
    EXPECT_EQ(choosePacing(nullptr, 0).why, "off");
}

TEST(RequestedPacing, AskedRateBelowTheSiteApplies) {
    const PacingChoice c = choosePacing("authz=x&wanio.pace=2500000", 12500000);
    EXPECT_EQ(c.rate, 2500000u);
    EXPECT_EQ(c.why, "asked");
    EXPECT_EQ(choosePacing("wanio.pace=2m", 12500000).rate, 2u << 20);
}

TEST(RequestedPacing, AskedRateAppliesOnAnUnpacedSite) {
    EXPECT_EQ(choosePacing("wanio.pace=3000000", 0).rate, 3000000u);
}

TEST(RequestedPacing, TheSitePacingIsTheCeiling) {
    const PacingChoice c = choosePacing("wanio.pace=1g", 12500000);
    EXPECT_EQ(c.rate, 12500000u);
    EXPECT_EQ(c.why, "site (asked more)");
}

TEST(RequestedPacing, TheLastAskWins) {
    EXPECT_EQ(choosePacing("wanio.pace=4m&x=1&wanio.pace=3m", 0).rate, 3u << 20);
}

TEST(RequestedPacing, MalformedAsksAreRefusedAndTheSiteApplies) {
    for (const char* bad :
         {"wanio.pace=", "wanio.pace=fast", "wanio.pace=-5", "wanio.pace=1000", "wanio.pace=65g",
          "wanio.pace=3m&wanio.pace=12x", "wanio.pace=99999999999999999999999"}) {
        const PacingChoice c = choosePacing(bad, 12500000);
        EXPECT_EQ(c.rate, 12500000u) << bad;
        EXPECT_NE(c.why.find("refused"), std::string::npos) << bad;
    }
}

TEST(RequestedPacing, SimilarKeysAreNotTheAsk) {
    EXPECT_EQ(choosePacing("wanio.paced=2m&xwanio.pace=2m&wanio.pace", 12500000).rate, 12500000u);
}
