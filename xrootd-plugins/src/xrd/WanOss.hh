// The stacked storage-system wrapper (loaded with `ofs.osslib ++`). It owns
// the resources shared by all files: the writer thread pool and the global
// write-behind memory budget, and the metrics file writer (wanio.metrics.file).
#pragma once

#include <memory>

#include "XrdOss/XrdOss.hh"
#include "XrdOss/XrdOssWrapper.hh"
#include "XrdSys/XrdSysError.hh"
#include "core/MemoryBudget.hh"
#include "core/MetricsFileWriter.hh"
#include "core/MetricsText.hh"
#include "core/WanConfig.hh"
#include "core/WriteBehindFile.hh"
#include "core/WriterPool.hh"

class XrdSysLogger;

namespace wanio {

class WanOss : public XrdOssWrapper {
  public:
    WanOss(XrdOss& wrapped, const WanConfig& config, XrdSysLogger* logger);
    ~WanOss() override;

    XrdOssDF* newFile(const char* tident) override;
    // XrdOssWrapper::Create in 5.5 drops `opts` (mkpath/new/open flags); pass them on.
    int Create(const char* tid, const char* path, mode_t mode, XrdOucEnv& env,
               int opts = 0) override;

    const WanConfig& config() const { return config_; }
    WriteBehindSettings writeBehindSettings() const;
    WriterPool& pool() { return *pool_; }
    MemoryBudget& budget() { return *budget_; }
    XrdSysError& log() { return log_; }
    // Removes a file through the wrapped storage system (used for failed uploads).
    int removeFile(const char* path) { return wrapPI.Unlink(path); }
    // Every counter of the plugin in this server process, as the metrics file shows them.
    MetricsSnapshot metricsSnapshot() const;

  private:
    const WanConfig config_;
    XrdSysError log_;
    std::unique_ptr<MemoryBudget> budget_;
    std::unique_ptr<WriterPool> pool_;
    const double startTime_;
    // Last: stopped before the budget and pool it reads are destroyed.
    std::unique_ptr<MetricsFileWriter> metrics_;
};

}  // namespace wanio
