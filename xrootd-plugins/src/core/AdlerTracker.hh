// Streaming adler32 over extents written in any order. Each extent's adler32
// is computed independently (in a writer thread) and neighbours are merged
// with zlib's adler32_combine64, so the whole-file value is known at close
// without re-reading the file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>

namespace wanio {

class AdlerTracker {
  public:
    // Records that [offset, offset+len) now holds data with adler32 `adler`.
    void add(off_t offset, std::uint64_t len, std::uint32_t adler);
    // Any later rewrite or truncation makes the streamed value unusable.
    void invalidate() { valid_ = false; }

    // True, with the value, iff the extents cover exactly [0, fileSize) once.
    bool wholeFile(off_t fileSize, std::uint32_t& adler) const;
    bool valid() const { return valid_; }
    std::size_t extentCount() const { return extents_.size(); }

  private:
    struct Extent {
        std::uint64_t len;
        std::uint32_t adler;
    };
    std::map<off_t, Extent> extents_;  // keyed by start offset, never overlapping
    bool valid_ = true;
};

}  // namespace wanio
