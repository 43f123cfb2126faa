#include "WanConfig.hh"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <vector>

namespace wanio {

namespace {

constexpr const char* kPrefix = "wanio.";

std::vector<std::string> splitWords(const std::string& line) {
    std::vector<std::string> words;
    std::istringstream in(line);
    std::string word;
    while (in >> word) {
        if (word[0] == '#') break;  // comment to end of line
        words.push_back(word);
    }
    return words;
}

bool parseInt(const std::string& text, long lo, long hi, int& out) {
    if (text.empty()) return false;
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(text.c_str(), &end, 10);
    // The whole string must be the number: a config file may hold a NUL byte, and
    // strtol's view of the text ends there.
    if (errno != 0 || end != text.c_str() + text.size() || v < lo || v > hi) return false;
    out = static_cast<int>(v);
    return true;
}

bool parseOnOff(const std::string& text, bool& out) {
    if (text == "on") {
        out = true;
        return true;
    }
    if (text == "off") {
        out = false;
        return true;
    }
    return false;
}

bool parsePolicy(const std::string& text, ErrorPolicy& out) {
    if (text == "unlink") {
        out = ErrorPolicy::Unlink;
        return true;
    }
    if (text == "keep") {
        out = ErrorPolicy::Keep;
        return true;
    }
    return false;
}

// An absolute path the log echo reads back the same: printable ASCII, no backslash (a line
// continuation at the end of a directive) and no NUL (the file name would stop there).
bool isPlainPath(const std::string& text) {
    if (text.empty() || text[0] != '/' || text.size() > 4000) return false;
    for (char ch : text)
        if (ch <= ' ' || ch > '~' || ch == '\\') return false;
    return true;
}

// Applies one directive (name without prefix, single value) to cfg.
// Returns an empty string on success, else the error message.
std::string applyDirective(const std::string& name, const std::vector<std::string>& values,
                           WanConfig& cfg) {
    if (values.size() != 1) {
        return "directive wanio." + name + " expects exactly one value, got " +
               std::to_string(values.size());
    }
    const std::string& v = values[0];
    auto bad = [&](const std::string& expected) {
        return "invalid value '" + v + "' for wanio." + name + " (expected " + expected + ")";
    };
    std::uint64_t size = 0;
    if (name == "wb") {
        if (!parseOnOff(v, cfg.writeBehind)) return bad("on|off");
    } else if (name == "wb.chunk") {
        if (!parseSize(v, size) || size < (64u << 10) || size > (256u << 20) || size % 4096 != 0)
            return bad("a multiple of 4k between 64k and 256m");
        cfg.chunkSize = static_cast<std::size_t>(size);
    } else if (name == "wb.threads") {
        if (!parseInt(v, 1, 256, cfg.writerThreads)) return bad("an integer 1..256");
    } else if (name == "wb.perfile") {
        if (!parseInt(v, 1, 64, cfg.perFileWriters)) return bad("an integer 1..64");
    } else if (name == "wb.queue") {
        if (!parseInt(v, 1, 4096, cfg.perFileQueue)) return bad("an integer 1..4096");
    } else if (name == "wb.maxmem") {
        if (!parseSize(v, size) || size < (1u << 20) || size > (1ull << 40))
            return bad("a size between 1m and 1t");
        cfg.maxMemory = size;
    } else if (name == "wb.wait") {
        if (!parseInt(v, 1, 86400, cfg.waitSeconds)) return bad("seconds 1..86400");
    } else if (name == "wb.odirect") {
        if (!parseOnOff(v, cfg.directIo)) return bad("on|off");
    } else if (name == "wb.writeback") {
        if (!parseOnOff(v, cfg.writeback)) return bad("on|off");
    } else if (name == "wb.fsync") {
        if (v == "close")
            cfg.fsyncOnClose = true;
        else if (v == "none")
            cfg.fsyncOnClose = false;
        else
            return bad("none|close");
    } else if (name == "wb.prealloc") {
        if (!parseOnOff(v, cfg.preallocate)) return bad("on|off");
    } else if (name == "wb.onerror") {
        if (!parsePolicy(v, cfg.onError)) return bad("unlink|keep");
    } else if (name == "wb.incomplete") {
        if (!parsePolicy(v, cfg.incomplete)) return bad("unlink|keep");
    } else if (name == "cks") {
        if (v == "adler32")
            cfg.checksum = true;
        else if (v == "off")
            cfg.checksum = false;
        else
            return bad("adler32|off");
    } else if (name == "rd.readahead") {
        if (!parseSize(v, size) || size > (4ull << 30)) return bad("a size between 0 and 4g");
        cfg.readahead = size;
    } else if (name == "net.pacing") {
        if (v == "off") {
            cfg.pacing = 0;
        } else if (!parseSize(v, size) || size < (1u << 20) || size > (64ull << 30)) {
            return bad("off or a rate in bytes per second between 1m and 64g");
        } else {
            cfg.pacing = size;
        }
    } else if (name == "rd.threads") {
        if (!parseInt(v, 0, 64, cfg.readaheadThreads)) return bad("an integer 0..64");
    } else if (name == "metrics.file") {
        if (v == "off") {
            cfg.metricsFile.clear();
        } else if (!isPlainPath(v)) {
            return bad("off or an absolute path of printable characters, no backslash");
        } else {
            cfg.metricsFile = v;
        }
    } else if (name == "metrics.every") {
        if (!parseInt(v, 1, 3600, cfg.metricsEvery)) return bad("seconds 1..3600");
    } else if (name == "trace") {
        if (v == "none")
            cfg.trace = TraceLevel::None;
        else if (v == "info")
            cfg.trace = TraceLevel::Info;
        else if (v == "debug")
            cfg.trace = TraceLevel::Debug;
        else
            return bad("none|info|debug");
    } else {
        return "unknown directive wanio." + name;
    }
    return std::string();
}

std::string checkConsistency(const WanConfig& cfg) {
    if (cfg.maxMemory < cfg.chunkSize) return "wanio.wb.maxmem must be at least wanio.wb.chunk";
    return std::string();
}

}  // namespace

int readsInFlightForBdp(std::uint64_t bdp, std::uint64_t chunk) {
    if (chunk == 0) return 1;
    // Rounded up without (bdp + chunk - 1), which wraps for a bdp near 2^64 (e.g.
    // --bdp 18446744073709551615) and gave 1 read in flight instead of the most.
    const std::uint64_t covering = bdp / chunk + (bdp % chunk != 0);
    return covering >= 1023 ? 1024 : static_cast<int>(covering) + 1;
}

bool parseSize(const std::string& text, std::uint64_t& value) {
    if (text.empty() || text[0] < '0' || text[0] > '9') return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (errno != 0) return false;
    std::uint64_t mult = 1;
    // Up to the end of the string, not the first NUL byte (see parseInt).
    const std::string suffix = text.substr(static_cast<std::size_t>(end - text.c_str()));
    if (suffix == "k" || suffix == "K")
        mult = 1ull << 10;
    else if (suffix == "m" || suffix == "M")
        mult = 1ull << 20;
    else if (suffix == "g" || suffix == "G")
        mult = 1ull << 30;
    else if (suffix == "t" || suffix == "T")
        mult = 1ull << 40;
    else if (!suffix.empty())
        return false;
    if (v > UINT64_MAX / mult) return false;
    value = v * mult;
    return true;
}

ConfigResult parseConfigText(const std::string& text, const WanConfig& base) {
    ConfigResult result;
    result.config = base;
    std::istringstream in(text);
    std::string raw;
    int lineNo = 0;
    while (std::getline(in, raw)) {
        ++lineNo;
        const int firstLine = lineNo;
        // XRootD continues a directive on the next line after a trailing backslash.
        while (!raw.empty() && raw.back() == '\\') {
            raw.pop_back();
            std::string next;
            if (!std::getline(in, next)) break;
            ++lineNo;
            raw += " " + next;
        }
        std::vector<std::string> words = splitWords(raw);
        if (words.empty() || words[0].compare(0, 6, kPrefix) != 0) continue;
        std::string name = words[0].substr(6);
        std::vector<std::string> values(words.begin() + 1, words.end());
        std::string err = applyDirective(name, values, result.config);
        if (!err.empty()) {
            result.ok = false;
            result.line = firstLine;
            result.message = "line " + std::to_string(firstLine) + ": " + err;
            return result;
        }
    }
    std::string err = checkConsistency(result.config);
    if (!err.empty()) {
        result.ok = false;
        result.message = err;
    }
    return result;
}

ConfigResult parseParms(const std::string& parms, const WanConfig& base) {
    ConfigResult result;
    result.config = base;
    for (const std::string& word : splitWords(parms)) {
        std::size_t eq = word.find('=');
        if (eq == std::string::npos || eq == 0) {
            result.ok = false;
            result.message = "osslib parameter '" + word + "' is not key=value";
            return result;
        }
        std::string name = word.substr(0, eq);
        if (name.compare(0, 6, kPrefix) == 0) name = name.substr(6);
        std::string err = applyDirective(name, {word.substr(eq + 1)}, result.config);
        if (!err.empty()) {
            result.ok = false;
            result.message = "osslib parameter: " + err;
            return result;
        }
    }
    std::string err = checkConsistency(result.config);
    if (!err.empty()) {
        result.ok = false;
        result.message = err;
    }
    return result;
}

std::string describeConfig(const WanConfig& c) {
    auto onoff = [](bool b) { return b ? "on" : "off"; };
    auto pol = [](ErrorPolicy p) { return p == ErrorPolicy::Unlink ? "unlink" : "keep"; };
    std::ostringstream out;
    out << "wanio.wb " << onoff(c.writeBehind) << "\n"
        << "wanio.wb.chunk " << c.chunkSize << "\n"
        << "wanio.wb.threads " << c.writerThreads << "\n"
        << "wanio.wb.perfile " << c.perFileWriters << "\n"
        << "wanio.wb.queue " << c.perFileQueue << "\n"
        << "wanio.wb.maxmem " << c.maxMemory << "\n"
        << "wanio.wb.wait " << c.waitSeconds << "\n"
        << "wanio.wb.odirect " << onoff(c.directIo) << "\n"
        << "wanio.wb.writeback " << onoff(c.writeback) << "\n"
        << "wanio.wb.fsync " << (c.fsyncOnClose ? "close" : "none") << "\n"
        << "wanio.wb.prealloc " << onoff(c.preallocate) << "\n"
        << "wanio.wb.onerror " << pol(c.onError) << "\n"
        << "wanio.wb.incomplete " << pol(c.incomplete) << "\n"
        << "wanio.cks " << (c.checksum ? "adler32" : "off") << "\n"
        << "wanio.rd.readahead " << c.readahead << "\n"
        << "wanio.rd.threads " << c.readaheadThreads << "\n"
        << "wanio.net.pacing " << c.pacing << "\n"
        << "wanio.trace "
        << (c.trace == TraceLevel::None   ? "none"
            : c.trace == TraceLevel::Info ? "info"
                                          : "debug")
        << "\n"
        << "wanio.metrics.file " << (c.metricsFile.empty() ? "off" : c.metricsFile) << "\n"
        << "wanio.metrics.every " << c.metricsEvery;
    return out.str();
}

}  // namespace wanio
