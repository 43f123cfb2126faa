#include <gtest/gtest.h>

#include "core/TraceIdent.hh"

TEST(TraceIdent, NamesTheLinkDescriptor) {
    EXPECT_EQ(wanio::linkDescriptor("xrootd.12345:27@host.example.org"), 27);
    EXPECT_EQ(wanio::linkDescriptor("u.1:0@h"), 0);
    // A ':' in the user name: the descriptor follows the last ':' before the '@'.
    EXPECT_EQ(wanio::linkDescriptor("odd:user.77:31@[::1]"), 31);
}

TEST(TraceIdent, NamesNoneWhenMalformed) {
    EXPECT_EQ(wanio::linkDescriptor(nullptr), -1);
    EXPECT_EQ(wanio::linkDescriptor(""), -1);
    EXPECT_EQ(wanio::linkDescriptor("xrootd.12345:27"), -1);    // no host
    EXPECT_EQ(wanio::linkDescriptor("xrootd.12345@host"), -1);  // no descriptor
    EXPECT_EQ(wanio::linkDescriptor("xrootd.1:@host"), -1);
    EXPECT_EQ(wanio::linkDescriptor("xrootd.1:2x@host"), -1);
    EXPECT_EQ(wanio::linkDescriptor("xrootd.1:99999999999@host"), -1);
}
