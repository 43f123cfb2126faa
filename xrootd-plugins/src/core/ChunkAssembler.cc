#include "ChunkAssembler.hh"

#include <cerrno>
#include <cstring>
#include <utility>

namespace wanio {

ChunkAssembler::ChunkAssembler(std::size_t chunkSize, Allocate allocate, Emit emit)
    : chunkSize_(chunkSize), allocate_(std::move(allocate)), emit_(std::move(emit)) {}

ssize_t ChunkAssembler::add(const char* data, off_t offset, std::size_t len) {
    if (offset < 0) return -EINVAL;
    std::size_t done = 0;
    while (done < len) {
        const off_t pos = offset + static_cast<off_t>(done);
        const off_t base = pos - pos % static_cast<off_t>(chunkSize_);
        const std::size_t inChunk = static_cast<std::size_t>(pos - base);
        const std::size_t piece = std::min(len - done, chunkSize_ - inChunk);

        // A write that does not extend the open chunk closes it.
        if (open_.buffer && (open_.base != base || open_.end != inChunk)) {
            int rc = flush();
            if (rc < 0) return rc;
        }
        if (!open_.buffer) {
            std::unique_ptr<AlignedBuffer> buffer;
            int rc = allocate_(buffer);
            if (rc < 0) return rc;
            open_.buffer = std::move(buffer);
            open_.base = base;
            open_.begin = inChunk;
            open_.end = inChunk;
        }
        std::memcpy(open_.buffer->data() + inChunk, data + done, piece);
        open_.end = inChunk + piece;
        done += piece;
        if (open_.end == chunkSize_) {
            int rc = flush();
            if (rc < 0) return rc;
        }
    }
    return static_cast<ssize_t>(len);
}

int ChunkAssembler::flush() {
    if (!open_.buffer) return 0;
    Chunk out = std::move(open_);
    open_ = Chunk();
    return emit_(std::move(out));
}

void ChunkAssembler::discard() {
    open_ = Chunk();
}

}  // namespace wanio
