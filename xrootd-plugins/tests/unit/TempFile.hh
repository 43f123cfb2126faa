// A temporary file, and a temporary folder, on the real filesystem, removed at scope exit.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

class TempFile {
  public:
    TempFile() {
        char name[] = "/tmp/wanio-unit-XXXXXX";
        fd_ = mkstemp(name);
        path_ = name;
    }
    ~TempFile() {
        if (fd_ >= 0) close(fd_);
        unlink(path_.c_str());
    }
    int fd() const { return fd_; }
    const std::string& path() const { return path_; }
    std::vector<char> contents() const {
        struct stat st;
        fstat(fd_, &st);
        std::vector<char> data(static_cast<size_t>(st.st_size));
        size_t done = 0;
        while (done < data.size()) {
            ssize_t n = pread(fd_, data.data() + done, data.size() - done, done);
            if (n <= 0) break;
            done += static_cast<size_t>(n);
        }
        data.resize(done);
        return data;
    }

  private:
    int fd_ = -1;
    std::string path_;
};

class TempDir {
  public:
    TempDir() {
        char name[] = "/tmp/wanio-unit-dir-XXXXXX";  // mkdtemp's template
        const char* made = mkdtemp(name);
        if (!made) throw std::runtime_error("mkdtemp failed");
        path_ = made;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};
