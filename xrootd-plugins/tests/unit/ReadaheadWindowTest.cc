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

TEST(ReadaheadWindow, ParallelReadsOutOfOrderKeepTheWindowGoing) {
    // Six 8-byte reads in flight, served by several threads: they arrive as 1, 0, 2, 5, 3, 4.
    wanio::ReadaheadWindow window(64);
    off_t from = -1, len = -1;
    ASSERT_TRUE(window.onRead(8, 8, from, len));  // the front is at 16
    EXPECT_EQ(from, 16);
    EXPECT_EQ(len, 64);                             // [16, 80)
    EXPECT_FALSE(window.onRead(0, 8, from, len));   // behind the front: not a reset
    EXPECT_FALSE(window.onRead(16, 8, from, len));  // front 24, 56 ahead
    EXPECT_FALSE(window.onRead(40, 8, from, len));  // front 48, 32 ahead: exactly half
    EXPECT_FALSE(window.onRead(24, 8, from, len));
    EXPECT_FALSE(window.onRead(32, 8, from, len));
    // The next read tops up from where the prefetch ended, not from scratch.
    ASSERT_TRUE(window.onRead(48, 8, from, len));  // front 56, 24 ahead < half
    EXPECT_EQ(from, 80);
    EXPECT_EQ(len, 56 + 64 - 80);
}

TEST(ReadaheadWindow, AJumpBeyondOneWindowIsRandomAccess) {
    wanio::ReadaheadWindow window(64);
    off_t from = -1, len = -1;
    ASSERT_TRUE(window.onRead(0, 8, from, len));
    // Just past one window ahead of the front (8), then another jump: random both times.
    EXPECT_FALSE(window.onRead(8 + 64 + 1, 8, from, len));
    EXPECT_FALSE(window.onRead(1000, 8, from, len));
}
