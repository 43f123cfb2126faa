#include <gtest/gtest.h>

#include <cerrno>
#include <random>
#include <vector>

#include "core/ChunkAssembler.hh"

namespace {

// Collects emitted chunks and applies them to an in-memory image.
struct Sink {
    std::vector<char> image;
    std::vector<std::pair<off_t, size_t>> pieces;
    size_t chunkSize;
    int allocations = 0;

    wanio::ChunkAssembler make() {
        return wanio::ChunkAssembler(
            chunkSize,
            [this](std::unique_ptr<wanio::AlignedBuffer>& out) {
                ++allocations;
                out = std::make_unique<wanio::AlignedBuffer>(chunkSize);
                return 0;
            },
            [this](wanio::Chunk&& c) {
                EXPECT_EQ(c.base % static_cast<off_t>(chunkSize), 0);
                EXPECT_LE(c.end, chunkSize);
                EXPECT_LT(c.begin, c.end);
                const size_t end = static_cast<size_t>(c.fileOffset()) + c.length();
                if (image.size() < end) image.resize(end, 0);
                std::copy(c.bytes(), c.bytes() + c.length(), image.begin() + c.fileOffset());
                pieces.emplace_back(c.fileOffset(), c.length());
                return 0;
            });
    }
};

std::vector<char> pattern(size_t n, unsigned seed) {
    std::vector<char> v(n);
    std::mt19937 rng(seed);
    for (char& c : v) c = static_cast<char>(rng());
    return v;
}

}  // namespace

TEST(ChunkAssembler, RandomWriteSequencesReproduceTheSameBytes) {
    const size_t chunk = 4096;
    for (unsigned seed = 1; seed <= 300; ++seed) {
        std::mt19937 rng(seed);
        Sink sink{{}, {}, chunk};
        wanio::ChunkAssembler assembler = sink.make();
        std::vector<char> expected;
        const int ops = 1 + static_cast<int>(rng() % 40);
        off_t cursor = 0;
        for (int i = 0; i < ops; ++i) {
            // Mostly sequential streams, sometimes jumps, overlaps and 1-byte writes.
            off_t offset = (rng() % 4 == 0) ? static_cast<off_t>(rng() % (6 * chunk)) : cursor;
            size_t len = (rng() % 5 == 0) ? 1 : 1 + rng() % (3 * chunk);
            std::vector<char> data = pattern(len, seed * 1000 + i);
            ASSERT_EQ(assembler.add(data.data(), offset, len), static_cast<ssize_t>(len));
            if (expected.size() < offset + len) expected.resize(offset + len, 0);
            std::copy(data.begin(), data.end(), expected.begin() + offset);
            cursor = offset + static_cast<off_t>(len);
        }
        ASSERT_EQ(assembler.flush(), 0);
        EXPECT_FALSE(assembler.hasOpenChunk());
        sink.image.resize(expected.size(), 0);
        ASSERT_EQ(sink.image, expected) << "seed " << seed;
    }
}

TEST(ChunkAssembler, SequentialWritesBecomeWholeChunks) {
    const size_t chunk = 8 << 20;
    Sink sink{{}, {}, chunk};
    wanio::ChunkAssembler assembler = sink.make();
    std::vector<char> block = pattern(2 << 20, 7);  // kXR_write-sized pieces
    for (int i = 0; i < 9; ++i)
        ASSERT_EQ(assembler.add(block.data(), static_cast<off_t>(i) * block.size(), block.size()),
                  static_cast<ssize_t>(block.size()));
    ASSERT_EQ(sink.pieces.size(), 2u);  // two full chunks emitted on filling up
    EXPECT_EQ(sink.pieces[0], std::make_pair(off_t(0), chunk));
    EXPECT_EQ(sink.pieces[1], std::make_pair(off_t(chunk), chunk));
    ASSERT_EQ(assembler.flush(), 0);
    ASSERT_EQ(sink.pieces.size(), 3u);
    EXPECT_EQ(sink.pieces[2], std::make_pair(off_t(2 * chunk), size_t(2 << 20)));
}

TEST(ChunkAssembler, StraddlingWriteIsSplitAtChunkBoundaries) {
    const size_t chunk = 4096;
    Sink sink{{}, {}, chunk};
    wanio::ChunkAssembler assembler = sink.make();
    std::vector<char> data = pattern(3 * chunk, 3);
    ASSERT_EQ(assembler.add(data.data(), 100, data.size()), static_cast<ssize_t>(data.size()));
    ASSERT_EQ(assembler.flush(), 0);
    ASSERT_EQ(sink.pieces.size(), 4u);
    EXPECT_EQ(sink.pieces[0], std::make_pair(off_t(100), chunk - 100));
    EXPECT_EQ(sink.pieces[1], std::make_pair(off_t(chunk), chunk));
    EXPECT_EQ(sink.pieces[3], std::make_pair(off_t(3 * chunk), size_t(100)));
}

TEST(ChunkAssembler, GapClosesTheOpenChunk) {
    const size_t chunk = 4096;
    Sink sink{{}, {}, chunk};
    wanio::ChunkAssembler assembler = sink.make();
    std::vector<char> data = pattern(10, 4);
    ASSERT_EQ(assembler.add(data.data(), 0, 10), 10);
    ASSERT_EQ(assembler.add(data.data(), 20, 10), 10);  // same chunk, not contiguous
    ASSERT_EQ(sink.pieces.size(), 1u);
    EXPECT_EQ(sink.pieces[0], std::make_pair(off_t(0), size_t(10)));
    ASSERT_EQ(assembler.flush(), 0);
    EXPECT_EQ(sink.pieces[1], std::make_pair(off_t(20), size_t(10)));
}

TEST(ChunkAssembler, AllocationFailureIsReturned) {
    wanio::ChunkAssembler assembler(
        4096, [](std::unique_ptr<wanio::AlignedBuffer>&) { return -ETIMEDOUT; },
        [](wanio::Chunk&&) { return 0; });
    char byte = 1;
    EXPECT_EQ(assembler.add(&byte, 0, 1), -ETIMEDOUT);
}

TEST(ChunkAssembler, EmitFailureIsReturned) {
    wanio::ChunkAssembler assembler(
        4096,
        [](std::unique_ptr<wanio::AlignedBuffer>& out) {
            out = std::make_unique<wanio::AlignedBuffer>(4096);
            return 0;
        },
        [](wanio::Chunk&&) { return -ENOSPC; });
    std::vector<char> data(4096, 'x');
    EXPECT_EQ(assembler.add(data.data(), 0, data.size()), -ENOSPC);
}
