#include "AdlerTracker.hh"

#include <zlib.h>

#include <iterator>

namespace wanio {

void AdlerTracker::add(off_t offset, std::uint64_t len, std::uint32_t adler) {
    if (!valid_ || len == 0) return;
    const off_t end = offset + static_cast<off_t>(len);
    // Reject overlap with the extent starting at or before us, or after us.
    auto next = extents_.lower_bound(offset);
    if (next != extents_.end() && next->first < end) {
        valid_ = false;
        return;
    }
    if (next != extents_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + static_cast<off_t>(prev->second.len) > offset) {
            valid_ = false;
            return;
        }
    }
    off_t start = offset;
    Extent merged{len, adler};
    if (next != extents_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + static_cast<off_t>(prev->second.len) == offset) {
            merged.adler = static_cast<std::uint32_t>(
                adler32_combine64(prev->second.adler, merged.adler, static_cast<off_t>(len)));
            merged.len += prev->second.len;
            start = prev->first;
            extents_.erase(prev);
        }
    }
    if (next != extents_.end() && next->first == end) {
        merged.adler = static_cast<std::uint32_t>(adler32_combine64(
            merged.adler, next->second.adler, static_cast<off_t>(next->second.len)));
        merged.len += next->second.len;
        extents_.erase(next);
    }
    extents_.emplace(start, merged);
}

bool AdlerTracker::wholeFile(off_t fileSize, std::uint32_t& adler) const {
    if (!valid_) return false;
    if (fileSize == 0) {
        if (!extents_.empty()) return false;
        adler = 1;  // adler32 of no data
        return true;
    }
    if (extents_.size() != 1) return false;
    const auto& only = *extents_.begin();
    if (only.first != 0 || static_cast<off_t>(only.second.len) != fileSize) return false;
    adler = only.second.adler;
    return true;
}

}  // namespace wanio
