#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/AdlerTracker.hh"

namespace {

std::uint32_t adlerOf(const std::vector<unsigned char>& data, size_t off, size_t len) {
    return static_cast<std::uint32_t>(adler32(1, data.data() + off, static_cast<uInt>(len)));
}

}  // namespace

TEST(AdlerTracker, RandomOrderExtentsCombineToWholeFileAdler) {
    for (unsigned seed = 1; seed <= 50; ++seed) {
        std::mt19937 rng(seed);
        const size_t size = 1 + rng() % (3 << 20);
        std::vector<unsigned char> data(size);
        for (auto& b : data) b = static_cast<unsigned char>(rng());
        // Cut into random extents and feed them in random order.
        std::vector<std::pair<size_t, size_t>> extents;
        for (size_t off = 0; off < size;) {
            size_t len = std::min(size - off, static_cast<size_t>(1 + rng() % (512 << 10)));
            extents.emplace_back(off, len);
            off += len;
        }
        std::shuffle(extents.begin(), extents.end(), rng);
        wanio::AdlerTracker tracker;
        for (auto [off, len] : extents) tracker.add(off, len, adlerOf(data, off, len));
        std::uint32_t combined = 0;
        ASSERT_TRUE(tracker.wholeFile(size, combined)) << "seed " << seed;
        EXPECT_EQ(combined, adlerOf(data, 0, size)) << "seed " << seed;
        EXPECT_EQ(tracker.extentCount(), 1u);
    }
}

TEST(AdlerTracker, HoleMeansNoWholeFileValue) {
    std::vector<unsigned char> data(1000, 7);
    wanio::AdlerTracker tracker;
    tracker.add(0, 400, adlerOf(data, 0, 400));
    tracker.add(500, 500, adlerOf(data, 500, 500));
    std::uint32_t v = 0;
    EXPECT_FALSE(tracker.wholeFile(1000, v));
    EXPECT_EQ(tracker.extentCount(), 2u);
}

TEST(AdlerTracker, OverlapInvalidates) {
    std::vector<unsigned char> data(1000, 9);
    wanio::AdlerTracker tracker;
    tracker.add(0, 600, adlerOf(data, 0, 600));
    tracker.add(500, 500, adlerOf(data, 500, 500));
    EXPECT_FALSE(tracker.valid());
    std::uint32_t v = 0;
    EXPECT_FALSE(tracker.wholeFile(1000, v));
}

TEST(AdlerTracker, RewriteOfSameRangeInvalidates) {
    std::vector<unsigned char> data(100, 1);
    wanio::AdlerTracker tracker;
    tracker.add(0, 100, adlerOf(data, 0, 100));
    tracker.add(0, 100, adlerOf(data, 0, 100));
    EXPECT_FALSE(tracker.valid());
}

TEST(AdlerTracker, SizeMismatchMeansNoValue) {
    std::vector<unsigned char> data(100, 1);
    wanio::AdlerTracker tracker;
    tracker.add(0, 100, adlerOf(data, 0, 100));
    std::uint32_t v = 0;
    EXPECT_FALSE(tracker.wholeFile(200, v));  // file grew behind our back
    EXPECT_TRUE(tracker.wholeFile(100, v));
}

TEST(AdlerTracker, EmptyFileIsOne) {
    wanio::AdlerTracker tracker;
    std::uint32_t v = 0;
    ASSERT_TRUE(tracker.wholeFile(0, v));
    EXPECT_EQ(v, 1u);
}

TEST(AdlerTracker, CombinesBeyondFourGiBOffsets) {
    // Two extents whose sum crosses 2^32 bytes: check against zlib directly,
    // computing the "whole" value by combining in strict file order.
    std::vector<unsigned char> a(1 << 20, 3), b(1 << 20, 5);
    const off_t firstLen = (5ll << 30);  // pretend a 5 GiB first extent
    std::uint32_t adlerA = 0x12345678;   // any valid adler value for that extent
    std::uint32_t adlerB = adlerOf(b, 0, b.size());
    wanio::AdlerTracker tracker;
    tracker.add(firstLen, b.size(), adlerB);
    tracker.add(0, firstLen, adlerA);
    std::uint32_t v = 0;
    ASSERT_TRUE(tracker.wholeFile(firstLen + static_cast<off_t>(b.size()), v));
    EXPECT_EQ(v, static_cast<std::uint32_t>(adler32_combine64(adlerA, adlerB, b.size())));
}
