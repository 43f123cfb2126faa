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

// mkstemp/mkdtemp's template in the system's temporary folder ($TMPDIR, else /tmp): the six X's are
// what those calls replace with a unique name.
inline std::string TempTemplate(const char* prefix) {
    return (std::filesystem::temp_directory_path() / (std::string(prefix) + "XXXXXX")).string();
}

class TempFile {
  public:
    TempFile() {
        std::string name = TempTemplate("wanio-unit-");
        fd_ = mkstemp(name.data());
        if (fd_ < 0) throw std::runtime_error("mkstemp failed in " + name);
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
        std::string name = TempTemplate("wanio-unit-dir-");
        if (!mkdtemp(name.data())) throw std::runtime_error("mkdtemp failed in " + name);
        path_ = name;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};
