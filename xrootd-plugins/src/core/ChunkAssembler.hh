// Turns a stream of arbitrary (offset, length) writes into chunk-aligned
// pieces: chunk i covers file bytes [i*C, (i+1)*C). A chunk is emitted when it
// is full, when the next write is not contiguous with it, or on flush().
// Not thread-safe: the owner serialises calls.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>

#include "Chunk.hh"

namespace wanio {

class ChunkAssembler {
  public:
    // Allocate fills `out` with a buffer of chunkSize bytes; returns 0 or -errno.
    using Allocate = std::function<int(std::unique_ptr<AlignedBuffer>& out)>;
    // Emit takes ownership of a finished chunk; returns 0 or -errno.
    using Emit = std::function<int(Chunk&& chunk)>;

    ChunkAssembler(std::size_t chunkSize, Allocate allocate, Emit emit);

    // Copies `len` bytes; returns len, or -errno from Allocate/Emit.
    ssize_t add(const char* data, off_t offset, std::size_t len);
    // Emits the open chunk, if any. Returns 0 or -errno.
    int flush();
    // Drops the open chunk without emitting it (after a sticky error).
    void discard();

    bool hasOpenChunk() const { return open_.buffer != nullptr; }
    std::size_t chunkSize() const { return chunkSize_; }

  private:
    const std::size_t chunkSize_;
    Allocate allocate_;
    Emit emit_;
    Chunk open_;
};

}  // namespace wanio
