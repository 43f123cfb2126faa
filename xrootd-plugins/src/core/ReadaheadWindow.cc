#include "ReadaheadWindow.hh"

#include <algorithm>

namespace wanio {

bool ReadaheadWindow::onRead(off_t offset, off_t size, off_t& prefetchFrom, off_t& prefetchLen) {
    if (window_ <= 0 || size <= 0) return false;
    const off_t end = offset + size;
    std::lock_guard<std::mutex> lock(mutex_);
    const bool sequential = offset == nextSequential_;
    nextSequential_ = end;
    if (!sequential) {
        edge_ = end;  // random access: let the kernel decide
        return false;
    }
    if (edge_ - end >= window_ / 2) return false;
    prefetchFrom = std::max(edge_, end);
    prefetchLen = end + window_ - prefetchFrom;
    edge_ = end + window_;
    return true;
}

}  // namespace wanio
