// A 4096-byte aligned heap buffer (suitable for O_DIRECT), owned RAII-style.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace wanio {

class AlignedBuffer {
  public:
    static constexpr std::size_t kAlignment = 4096;

    explicit AlignedBuffer(std::size_t size);
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;

    char* data() { return data_.get(); }
    const char* data() const { return data_.get(); }
    std::size_t size() const { return size_; }
    bool valid() const { return data_ != nullptr; }

  private:
    struct FreeDeleter {
        void operator()(char* p) const { std::free(p); }
    };
    std::unique_ptr<char, FreeDeleter> data_;
    std::size_t size_;
};

}  // namespace wanio
