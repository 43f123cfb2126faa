// One piece of file data on its way to disk: bytes [begin, end) of a buffer
// whose first byte belongs at file offset `base` (always a chunk boundary).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>

#include "AlignedBuffer.hh"

namespace wanio {

struct Chunk {
    std::unique_ptr<AlignedBuffer> buffer;
    off_t base = 0;
    std::size_t begin = 0;
    std::size_t end = 0;

    off_t fileOffset() const { return base + static_cast<off_t>(begin); }
    std::size_t length() const { return end - begin; }
    const char* bytes() const { return buffer->data() + begin; }
};

}  // namespace wanio
