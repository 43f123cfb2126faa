#include "WanOss.hh"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "WanOssFile.hh"
#include "core/ReadaheadPool.hh"

namespace wanio {

namespace {

double unixNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// The site label: the server's all.sitename (XRootD exports it as XRDSITE), else its
// instance name (-n), so two servers on one host write distinguishable series.
std::string siteName() {
    for (const char* name : {"XRDSITE", "XRDNAME"}) {
        const char* value = std::getenv(name);
        if (value && *value) return value;
    }
    return "unknown";
}

}  // namespace

WanOss::WanOss(XrdOss& wrapped, const WanConfig& config, XrdSysLogger* logger)
    : XrdOssWrapper(wrapped),
      config_(config),
      log_(logger, "wanio_"),
      budget_(std::make_unique<MemoryBudget>(config.maxMemory)),
      pool_(config.writeBehind ? std::make_unique<WriterPool>(config.writerThreads) : nullptr),
      startTime_(unixNow()) {
    if (config_.metricsFile.empty()) return;
    log_.Say("=====> wanio: metrics to ", config_.metricsFile.c_str());
    metrics_ = std::make_unique<MetricsFileWriter>(
        config_.metricsFile, std::chrono::seconds(config_.metricsEvery),
        [this] { return renderMetrics(metricsSnapshot()); },
        [this](int error) {
            if (error == 0)
                log_.Emsg("Metrics", "writing", config_.metricsFile.c_str(), "works again");
            else
                log_.Emsg("Metrics", -error, "write metrics file", config_.metricsFile.c_str());
        });
}

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

namespace wanio {

MetricsSnapshot WanOss::metricsSnapshot() const {
    MetricsSnapshot s;
    s.site = siteName();
    s.startTimeSeconds = startTime_;
    s.writtenAtSeconds = unixNow();
    copyCounters(PluginCounters::process(), s);
    s.memoryBytes = budget_->inUse();
    s.memoryPeakBytes = budget_->peak();
    s.memoryLimitBytes = budget_->capacity();
    if (const ReadaheadPool* pool = ReadaheadPool::shared(config_)) {
        const ReadaheadPool::Stats ra = pool->stats();
        s.readaheadRequests = ra.requests;
        s.readaheadDropped = ra.dropped;
        s.readaheadBytes = ra.bytes;
        s.readaheadErrors = ra.errors;
        s.readaheadQueuedSegments = ra.queued;
    }
    return s;
}

}  // namespace wanio
