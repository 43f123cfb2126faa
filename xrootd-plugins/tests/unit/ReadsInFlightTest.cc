#include <gtest/gtest.h>

#include "tpc/ReadsInFlight.hh"

using wanio::readsInFlightForPath;

namespace {
constexpr std::uint64_t kChunk = 8u << 20;
constexpr std::uint64_t kTenGbit = 1250000000;  // bytes/s
constexpr std::uint64_t kGiB = 1ull << 30;
}  // namespace

TEST(ReadsInFlight, CoverTheMeasuredPathWithAQuarterForItsQueue) {
    // 10 Gbit/s x 300 ms = 375 MB; x 1.25 = 468.75 MB = 55.9 chunks -> 56 + 1.
    EXPECT_EQ(readsInFlightForPath(kTenGbit, 0.300, kChunk, 16, kGiB).reads, 57);
    // The same site at 56 ms: 87.5 MB -> 11 chunks + 1, below the floor of 16.
    EXPECT_EQ(readsInFlightForPath(kTenGbit, 0.056, kChunk, 16, kGiB).reads, 16);
    // 150 ms: 234.4 MB -> 28 + 1.
    EXPECT_EQ(readsInFlightForPath(kTenGbit, 0.150, kChunk, 16, kGiB).reads, 29);
    EXPECT_FALSE(readsInFlightForPath(kTenGbit, 0.300, kChunk, 16, kGiB).memoryBound);
}

TEST(ReadsInFlight, WithoutARateOrARoundTripTheFloorHolds) {
    EXPECT_EQ(readsInFlightForPath(0, 0.300, kChunk, 16, kGiB).reads, 16);
    EXPECT_EQ(readsInFlightForPath(kTenGbit, 0.0, kChunk, 16, kGiB).reads, 16);
    EXPECT_EQ(readsInFlightForPath(kTenGbit, -1.0, kChunk, 16, kGiB).reads, 16);
    EXPECT_EQ(readsInFlightForPath(kTenGbit, 0.3, 0, 16, kGiB).reads, 16);
}

TEST(ReadsInFlight, AMemoryCapBelowThePathRunsAtWhatItAllowsAndSaysSo) {
    // 100 Gbit/s x 300 ms needs ~4.4 GiB of reads; 1 GiB allows 128 of 8 MiB.
    const auto plan = readsInFlightForPath(10 * kTenGbit, 0.300, kChunk, 16, kGiB);
    EXPECT_EQ(plan.reads, 128);
    EXPECT_TRUE(plan.memoryBound);
    EXPECT_GT(plan.wantedBytes, 4 * kGiB);
    const std::string line = wanio::describeReadsInFlight(plan, 10 * kTenGbit, 0.300, kChunk);
    EXPECT_NE(line.find("128 x 8 MiB"), std::string::npos) << line;
    EXPECT_NE(line.find("memory cap allows 1024 MiB"), std::string::npos) << line;
    // A cap below one chunk still leaves one read.
    EXPECT_EQ(readsInFlightForPath(kTenGbit, 0.3, kChunk, 16, 1).reads, 1);
}

TEST(ReadsInFlight, AHugeRateOrRoundTripStopsAtTheMostReads) {
    const auto plan = readsInFlightForPath(~0ull, 1e9, kChunk, 16, ~0ull);
    EXPECT_EQ(plan.reads, 1024);
    EXPECT_FALSE(plan.memoryBound);
}
