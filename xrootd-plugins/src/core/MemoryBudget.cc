#include "MemoryBudget.hh"

#include <algorithm>

namespace wanio {

bool MemoryBudget::acquire(std::uint64_t bytes, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    // A request larger than the whole budget could never be satisfied; let it
    // through alone so a misconfiguration degrades to "one chunk at a time".
    const std::uint64_t need = std::min(bytes, capacity_);
    if (!freed_.wait_until(lock, deadline, [&] { return used_ + need <= capacity_; })) return false;
    used_ += bytes;
    peak_ = std::max(peak_, used_);
    return true;
}

void MemoryBudget::release(std::uint64_t bytes) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        used_ -= std::min(bytes, used_);
    }
    freed_.notify_all();
}

std::unique_ptr<AlignedBuffer> MemoryBudget::buffer(std::size_t size) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = kept_.begin(); it != kept_.end(); ++it) {
            if ((*it)->size() != size) continue;
            std::unique_ptr<AlignedBuffer> reused = std::move(*it);
            kept_.erase(it);
            keptBytes_ -= size;
            return reused;
        }
    }
    return std::make_unique<AlignedBuffer>(size);
}

void MemoryBudget::recycle(std::unique_ptr<AlignedBuffer> buffer) {
    if (!buffer || !buffer->valid()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (keptBytes_ + buffer->size() > capacity_) return;  // freed as it goes out of scope
    keptBytes_ += buffer->size();
    kept_.push_back(std::move(buffer));
}

std::uint64_t MemoryBudget::keptBytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return keptBytes_;
}

std::uint64_t MemoryBudget::inUse() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return used_;
}

std::uint64_t MemoryBudget::peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
}

}  // namespace wanio
