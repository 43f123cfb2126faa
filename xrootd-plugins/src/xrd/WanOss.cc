#include "WanOss.hh"

#include "WanOssFile.hh"

namespace wanio {

WanOss::WanOss(XrdOss& wrapped, const WanConfig& config, XrdSysLogger* logger)
    : XrdOssWrapper(wrapped),
      config_(config),
      log_(logger, "wanio_"),
      budget_(std::make_unique<MemoryBudget>(config.maxMemory)),
      pool_(config.writeBehind ? std::make_unique<WriterPool>(config.writerThreads) : nullptr) {}

WanOss::~WanOss() = default;

XrdOssDF* WanOss::newFile(const char* tident) {
    XrdOssDF* inner = wrapPI.newFile(tident);
    if (!inner) return nullptr;
    // Ownership passes to the caller, as the XrdOss interface requires.
    return std::make_unique<WanOssFile>(std::unique_ptr<XrdOssDF>(inner), *this).release();
}

int WanOss::Create(const char* tid, const char* path, mode_t mode, XrdOucEnv& env, int opts) {
    return wrapPI.Create(tid, path, mode, env, opts);
}

WriteBehindSettings WanOss::writeBehindSettings() const {
    WriteBehindSettings s;
    s.chunkSize = config_.chunkSize;
    s.perFileWriters = config_.perFileWriters;
    s.perFileQueue = config_.perFileQueue;
    s.waitSeconds = config_.waitSeconds;
    s.writeback = config_.writeback;
    s.checksum = config_.checksum;
    return s;
}

}  // namespace wanio
