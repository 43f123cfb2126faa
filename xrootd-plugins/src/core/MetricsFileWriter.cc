#include "MetricsFileWriter.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "UniqueFd.hh"

namespace wanio {

namespace {

// "<dir>/.<name>.<pid>.tmp": hidden, and not *.prom, so the textfile collector skips it.
std::string temporaryFor(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    return dir + "/." + name + "." + std::to_string(::getpid()) + ".tmp";
}

int writeFile(const std::string& path, const std::string& text) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return -errno;
    // Readable by the exporter's account whatever the server's umask.
    if (::fchmod(fd.get(), 0644) != 0) return -errno;
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

}  // namespace

MetricsFileWriter::MetricsFileWriter(std::string path, std::chrono::milliseconds every,
                                     Render render, Report report)
    : path_(std::move(path)),
      temporary_(temporaryFor(path_)),
      every_(every),
      render_(std::move(render)),
      report_(std::move(report)) {
    writeNow();
    thread_ = std::thread([this] { run(); });
}

MetricsFileWriter::~MetricsFileWriter() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

int MetricsFileWriter::writeNow() {
    const std::string text = render_();
    std::lock_guard<std::mutex> lock(mutex_);
    int rc = writeFile(temporary_, text);
    if (rc == 0 && ::rename(temporary_.c_str(), path_.c_str()) != 0) rc = -errno;
    if (rc != 0) ::unlink(temporary_.c_str());
    if (rc != lastError_ && report_) report_(rc);
    lastError_ = rc;
    return rc;
}

void MetricsFileWriter::run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, every_, [this] { return stopping_; })) {
        lock.unlock();
        writeNow();
        lock.lock();
    }
}

}  // namespace wanio
