// Entry points: `ofs.osslib ++ libXrdWanIO.so [key=value ...]` (storage layer,
// write-behind + checksum) and `xrootd.fslib ++ libXrdWanIO.so` (file-system
// layer, readahead around sendfile).
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "WanOss.hh"
#include "WanSfs.hh"
#include "XrdOss/XrdOss.hh"
#include "XrdSys/XrdSysError.hh"
#include "XrdVersion.hh"
#include "core/WanConfig.hh"

namespace {

bool loadConfig(const char* cfn, const char* parms, XrdSysError& log, wanio::WanConfig& out) {
    std::string text;
    if (cfn && *cfn) {
        std::ifstream in(cfn);
        if (!in) {
            log.Emsg("Config", errno, "open config file", cfn);
            return false;
        }
        std::ostringstream buf;
        buf << in.rdbuf();
        text = buf.str();
    }
    wanio::ConfigResult fromFile = wanio::parseConfigText(text);
    if (!fromFile.ok) {
        log.Emsg("Config", cfn ? cfn : "(no config file)", fromFile.message.c_str());
        return false;
    }
    wanio::ConfigResult fromLine = wanio::parseParms(parms ? parms : "", fromFile.config);
    if (!fromLine.ok) {
        log.Emsg("Config", fromLine.message.c_str());
        return false;
    }
    out = fromLine.config;
    return true;
}

}  // namespace

#pragma GCC visibility push(default)

extern "C" XrdOss* XrdOssAddStorageSystem2(XrdOss* curr_oss, XrdSysLogger* logger, const char* cfn,
                                           const char* parms, XrdOucEnv* /*envP*/) {
    XrdSysError log(logger, "wanio_");
    log.Say("++++++ wanio OSS wrapper initialization started.");
    wanio::WanConfig config;
    if (!curr_oss || !loadConfig(cfn, parms, log, config)) {
        log.Say("------ wanio OSS wrapper initialization failed.");
        return nullptr;
    }
    std::istringstream settings(wanio::describeConfig(config));
    for (std::string line; std::getline(settings, line);) log.Say("=====> ", line.c_str());
    log.Say("------ wanio OSS wrapper initialization completed.");
    return std::make_unique<wanio::WanOss>(*curr_oss, config, logger).release();
}

XrdVERSIONINFO(XrdOssAddStorageSystem2, wanio);

extern "C" XrdSfsFileSystem* XrdSfsGetFileSystem2(XrdSfsFileSystem* nativeFS, XrdSysLogger* logger,
                                                  const char* cfn, XrdOucEnv* /*envP*/) {
    XrdSysError log(logger, "wanio_");
    log.Say("++++++ wanio file system wrapper initialization started.");
    wanio::WanConfig config;
    if (!nativeFS || !loadConfig(cfn, nullptr, log, config)) {
        if (!nativeFS) log.Emsg("Config", "xrootd.fslib ++ needs a file system to wrap");
        log.Say("------ wanio file system wrapper initialization failed.");
        return nullptr;
    }
    char line[128];
    snprintf(line, sizeof(line), "sendfile readahead window %llu bytes",
             static_cast<unsigned long long>(config.readahead));
    log.Say("=====> ", line);
    log.Say("------ wanio file system wrapper initialization completed.");
    return std::make_unique<wanio::WanSfs>(*nativeFS, config, logger).release();
}

XrdVERSIONINFO(XrdSfsGetFileSystem2, wanio);

#pragma GCC visibility pop
