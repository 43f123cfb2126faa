// The plugin's storage-layer wrapper stacked on XRootD's real default storage
// system (no server): the same objects OFS would drive, on a temp localroot.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "XrdOss/XrdOss.hh"
#include "XrdOss/XrdOssDefaultSS.hh"
#include "XrdOuc/XrdOucEnv.hh"
#include "XrdSys/XrdSysLogger.hh"
#include "XrdVersion.hh"
#include "core/CksXattr.hh"

extern "C" XrdOss* XrdOssAddStorageSystem2(XrdOss* curr_oss, XrdSysLogger* logger, const char* cfn,
                                           const char* parms, XrdOucEnv* envP);

namespace {

XrdVERSIONINFODEF(testVersion, wanioTest, XrdVNUMBER, XrdVERSION);

std::vector<char> randomBytes(size_t n, unsigned seed) {
    std::vector<char> v(n);
    std::mt19937 rng(seed);
    for (char& c : v) c = static_cast<char>(rng());
    return v;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// One default OSS + wanio wrapper for the whole suite (XRootD's OSS keeps
// process-wide state and is not meant to be created twice).
class WanOss : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        char tmpl[] = "/tmp/wanio-oss-XXXXXX";
        root_ = mkdtemp(tmpl);
        mkdir((root_ + "/data").c_str(), 0755);
        config_ = root_ + "/oss.cfg";
        std::ofstream(config_) << "oss.localroot " << root_ << "/data\n"
                               << "wanio.wb.chunk 64k\nwanio.wb.threads 3\nwanio.trace none\n";
        // Without an instance name XrdOucStream ignores every oss.* line.
        setenv("XRDINSTANCE", "gtest", 1);
        // XRootD keeps pointers to the logger for the life of the process.
        static XrdSysLogger logger(open("/dev/null", O_WRONLY), 0);
        logger_ = &logger;
        native_ = XrdOssDefaultSS(logger_, config_.c_str(), testVersion);
        ASSERT_NE(native_, nullptr);
        oss_.reset(XrdOssAddStorageSystem2(native_, logger_, config_.c_str(), "", nullptr));
        ASSERT_NE(oss_, nullptr);
    }
    static void TearDownTestSuite() {
        oss_.reset();
        std::string cmd = "rm -rf " + root_;
        ASSERT_EQ(system(cmd.c_str()), 0);
    }

    std::unique_ptr<XrdOssDF> create(const std::string& lfn, const char* cgi = "") {
        XrdOucEnv env(cgi);
        EXPECT_EQ(oss_->Create("test", lfn.c_str(), 0644, env, (O_RDWR | O_TRUNC) << 8), 0);
        std::unique_ptr<XrdOssDF> file(oss_->newFile("test"));
        EXPECT_EQ(file->Open(lfn.c_str(), O_RDWR, 0644, env), 0);
        return file;
    }
    std::string pfn(const std::string& lfn) { return root_ + "/data" + lfn; }

    static std::string root_, config_;
    static XrdSysLogger* logger_;
    static XrdOss* native_;
    static std::unique_ptr<XrdOss> oss_;
};

std::string WanOss::root_, WanOss::config_;
XrdSysLogger* WanOss::logger_ = nullptr;
XrdOss* WanOss::native_ = nullptr;
std::unique_ptr<XrdOss> WanOss::oss_;

}  // namespace

TEST_F(WanOss, UploadStoresBytesAndStockChecksumRecord) {
    std::vector<char> data = randomBytes(1000000, 1);
    auto file = create("/a.bin", "oss.asize=1000000");
    for (size_t off = 0; off < data.size(); off += 70000) {
        size_t len = std::min<size_t>(70000, data.size() - off);
        ASSERT_EQ(file->Write(data.data() + off, off, len), static_cast<ssize_t>(len));
    }
    ASSERT_EQ(file->Close(), 0);
    EXPECT_EQ(slurp(pfn("/a.bin")), std::string(data.begin(), data.end()));
    int fd = open(pfn("/a.bin").c_str(), O_RDONLY);
    std::uint32_t adler = 0;
    long long fmTime = 0;
    ASSERT_EQ(wanio::CksXattr::load(fd, adler, fmTime), 0);
    struct stat st;
    fstat(fd, &st);
    close(fd);
    EXPECT_EQ(adler, adler32(1, reinterpret_cast<const Bytef*>(data.data()), data.size()));
    EXPECT_EQ(fmTime, static_cast<long long>(st.st_mtime));
}

TEST_F(WanOss, ReadsAndStatSeeBufferedWritesBeforeClose) {
    std::vector<char> data = randomBytes(100000, 2);
    auto file = create("/b.bin");
    ASSERT_EQ(file->Write(data.data(), 0, data.size()), static_cast<ssize_t>(data.size()));
    struct stat st;
    ASSERT_EQ(file->Fstat(&st), 0);
    EXPECT_EQ(st.st_size, 100000);
    std::vector<char> back(data.size());
    ASSERT_EQ(file->Read(back.data(), 0, back.size()), static_cast<ssize_t>(back.size()));
    EXPECT_EQ(back, data);
    EXPECT_GE(file->getFD(), 0);  // the real descriptor stays available for sendfile
    ASSERT_EQ(file->Close(), 0);
}

TEST_F(WanOss, PgWriteVerifiesPageChecksumsAndWrites) {
    std::vector<char> data = randomBytes(3 * 4096, 3);
    auto file = create("/c.bin");
    std::vector<uint32_t> crcs(3, 0);  // wrong on purpose
    EXPECT_EQ(file->pgWrite(data.data(), 0, data.size(), crcs.data(), XrdOssDF::Verify), -EDOM);
    EXPECT_EQ(file->pgWrite(data.data(), 0, data.size(), nullptr, 0),
              static_cast<ssize_t>(data.size()));
    ASSERT_EQ(file->Close(), 0);
    EXPECT_EQ(slurp(pfn("/c.bin")), std::string(data.begin(), data.end()));
}

TEST_F(WanOss, CloseShortOfAsizeFailsAndRemovesFile) {
    std::vector<char> data = randomBytes(5000, 4);
    auto file = create("/d.bin", "oss.asize=10000");
    ASSERT_EQ(file->Write(data.data(), 0, data.size()), 5000);
    EXPECT_EQ(file->Close(), -EIO);
    EXPECT_NE(access(pfn("/d.bin").c_str(), F_OK), 0);
}

TEST_F(WanOss, DeleteWithoutCloseAppliesTheClosePolicy) {
    std::vector<char> data = randomBytes(5000, 5);
    {
        auto partial = create("/e.bin", "oss.asize=6000");
        ASSERT_EQ(partial->Write(data.data(), 0, data.size()), 5000);
    }  // disconnect: destroyed without Close
    EXPECT_NE(access(pfn("/e.bin").c_str(), F_OK), 0);
    {
        auto complete = create("/f.bin", "oss.asize=5000");
        ASSERT_EQ(complete->Write(data.data(), 0, data.size()), 5000);
    }
    EXPECT_EQ(slurp(pfn("/f.bin")), std::string(data.begin(), data.end()));
    EXPECT_GT(getxattr(pfn("/f.bin").c_str(), "user.XrdCks.adler32", nullptr, 0), 0);
}

TEST_F(WanOss, FirstWriteRemovesAStaleChecksum) {
    std::vector<char> data = randomBytes(4096, 6);
    auto first = create("/g.bin");
    ASSERT_EQ(first->Write(data.data(), 0, data.size()), 4096);
    ASSERT_EQ(first->Close(), 0);
    ASSERT_GT(getxattr(pfn("/g.bin").c_str(), "user.XrdCks.adler32", nullptr, 0), 0);
    // Reopen for update (no truncation) and rewrite the middle.
    XrdOucEnv env;
    std::unique_ptr<XrdOssDF> again(oss_->newFile("test"));
    ASSERT_EQ(again->Open("/g.bin", O_RDWR, 0644, env), 0);
    ASSERT_EQ(again->Write("zz", 100, 2), 2);
    EXPECT_LT(getxattr(pfn("/g.bin").c_str(), "user.XrdCks.adler32", nullptr, 0), 0);
    ASSERT_EQ(again->Close(), 0);
    // Only part of the file was streamed: no value stored (the stock manager computes it).
    EXPECT_LT(getxattr(pfn("/g.bin").c_str(), "user.XrdCks.adler32", nullptr, 0), 0);
}
