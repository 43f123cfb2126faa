#include "ReadaheadWindow.hh"

#include <algorithm>

namespace wanio {

bool ReadaheadWindow::onRead(off_t offset, off_t size, off_t& prefetchFrom, off_t& prefetchLen) {
    if (window_ <= 0 || size <= 0) return false;
    const off_t end = offset + size;
    std::lock_guard<std::mutex> lock(mutex_);
    // A client with several chunk reads in flight (xrdcp's parallel chunks, xrdcp-wan's reads
    // covering the path's BDP) is sequential, but the server serves its reads on several threads,
    // so they reach us slightly out of order. Any read within one window of the reader's front
    // counts as part of the stream; only a jump further away is random access.
    const bool nearFront = offset >= front_ - window_ && offset <= front_ + window_;
    if (!nearFront) {
        front_ = end;
        edge_ = end;  // random access: let the kernel decide
        return false;
    }
    front_ = std::max(front_, end);
    if (edge_ - front_ >= window_ / 2) return false;
    prefetchFrom = std::max(edge_, front_);
    prefetchLen = front_ + window_ - prefetchFrom;
    edge_ = front_ + window_;
    return true;
}

}  // namespace wanio
