#include <gtest/gtest.h>

#include "core/ReadaheadWindow.hh"

TEST(ReadaheadWindow, StaysAWindowAheadOfASequentialReader) {
    wanio::ReadaheadWindow window(64);
    off_t from = -1, len = -1;
    ASSERT_TRUE(window.onRead(0, 8, from, len));
    EXPECT_EQ(from, 8);
    EXPECT_EQ(len, 64);                             // [8, 72)
    EXPECT_FALSE(window.onRead(8, 8, from, len));   // 56 bytes still ahead
    EXPECT_FALSE(window.onRead(16, 8, from, len));  // 48
    EXPECT_FALSE(window.onRead(24, 8, from, len));  // 40
    EXPECT_FALSE(window.onRead(32, 8, from, len));  // 32: exactly half
    ASSERT_TRUE(window.onRead(40, 8, from, len));   // 24 ahead < half: top up
    EXPECT_EQ(from, 72);
    EXPECT_EQ(len, 48 + 64 - 72);  // up to the read's end + window
}

TEST(ReadaheadWindow, RandomAccessPrefetchesNothing) {
    wanio::ReadaheadWindow window(64);
    off_t from = 0, len = 0;
    EXPECT_FALSE(window.onRead(1000, 8, from, len));
    EXPECT_FALSE(window.onRead(50, 8, from, len));
    EXPECT_FALSE(window.onRead(5000, 8, from, len));
    // Becoming sequential again starts prefetching from the current end.
    ASSERT_TRUE(window.onRead(5008, 8, from, len));
    EXPECT_EQ(from, 5016);
}

TEST(ReadaheadWindow, ZeroWindowDisables) {
    wanio::ReadaheadWindow window(0);
    off_t from = 0, len = 0;
    EXPECT_FALSE(window.onRead(0, 8, from, len));
    EXPECT_FALSE(window.onRead(8, 8, from, len));
}
