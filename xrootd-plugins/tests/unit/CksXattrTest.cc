#include <arpa/inet.h>
#include <endian.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cerrno>
#include <cstring>

#include "TempFile.hh"
#include "XrdCks/XrdCksData.hh"
#include "core/CksXattr.hh"

TEST(CksXattr, StoresTheRecordTheStockManagerReads) {
    TempFile file;
    ASSERT_EQ(write(file.fd(), "hello", 5), 5);
    ASSERT_EQ(wanio::CksXattr::store(file.fd(), 0x062c0215u), 0);

    XrdCksData rec;
    ASSERT_EQ(fgetxattr(file.fd(), "user.XrdCks.adler32", &rec, sizeof(rec)),
              static_cast<ssize_t>(sizeof(rec)));
    EXPECT_STREQ(rec.Name, "adler32");
    EXPECT_EQ(rec.Length, 4);
    struct stat st;
    ASSERT_EQ(fstat(file.fd(), &st), 0);
    EXPECT_EQ(static_cast<long long>(be64toh(static_cast<std::uint64_t>(rec.fmTime))),
              static_cast<long long>(st.st_mtime));
    const unsigned char* v = reinterpret_cast<const unsigned char*>(rec.Value);
    EXPECT_EQ(v[0], 0x06);  // big-endian value, as XrdCksCalcadler32 produces
    EXPECT_EQ(v[3], 0x15);

    std::uint32_t adler = 0;
    long long fmTime = 0;
    ASSERT_EQ(wanio::CksXattr::load(file.fd(), adler, fmTime), 0);
    EXPECT_EQ(adler, 0x062c0215u);
    EXPECT_EQ(fmTime, static_cast<long long>(st.st_mtime));
}

TEST(CksXattr, RemoveDeletesAndToleratesAbsence) {
    TempFile file;
    ASSERT_EQ(wanio::CksXattr::store(file.fd(), 1), 0);
    ASSERT_EQ(wanio::CksXattr::remove(file.fd()), 0);
    std::uint32_t adler = 0;
    long long fmTime = 0;
    EXPECT_EQ(wanio::CksXattr::load(file.fd(), adler, fmTime), -ENODATA);
    EXPECT_EQ(wanio::CksXattr::remove(file.fd()), 0);
}
