#include "AlignedBuffer.hh"

namespace wanio {

AlignedBuffer::AlignedBuffer(std::size_t size) : size_(size) {
    void* p = nullptr;
    std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    if (posix_memalign(&p, kAlignment, rounded) == 0) data_.reset(static_cast<char*>(p));
}

}  // namespace wanio
