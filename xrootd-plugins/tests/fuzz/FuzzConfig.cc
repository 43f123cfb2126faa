// Fuzz target: the wanio.* configuration directives (WanConfig), fed as a whole config
// file, as the ofs.osslib parameters, and as one directive in both spellings.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "FuzzCheck.hh"
#include "core/WanConfig.hh"

using wanio::ConfigResult;
using wanio::WanConfig;

namespace {

// Every accepted config must be one the plugin can run with: the README's ranges.
void checkRanges(const WanConfig& c, const std::string& input) {
    const std::string why = "accepted out-of-range config from: " + input;
    FUZZ_CHECK(c.chunkSize >= (64u << 10) && c.chunkSize <= (256u << 20), why);
    FUZZ_CHECK(c.chunkSize % 4096 == 0, why);
    FUZZ_CHECK(c.writerThreads >= 1 && c.writerThreads <= 256, why);
    FUZZ_CHECK(c.perFileWriters >= 1 && c.perFileWriters <= 64, why);
    FUZZ_CHECK(c.perFileQueue >= 1 && c.perFileQueue <= 4096, why);
    FUZZ_CHECK(c.maxMemory >= (1u << 20) && c.maxMemory <= (1ull << 40), why);
    FUZZ_CHECK(c.maxMemory >= c.chunkSize, why);
    FUZZ_CHECK(c.waitSeconds >= 1 && c.waitSeconds <= 86400, why);
    FUZZ_CHECK(c.readahead <= (4ull << 30), why);
    FUZZ_CHECK(c.readaheadThreads >= 0 && c.readaheadThreads <= 64, why);
    FUZZ_CHECK(c.pacing == 0 || (c.pacing >= (1u << 20) && c.pacing <= (64ull << 30)), why);
    FUZZ_CHECK(c.metricsEvery >= 1 && c.metricsEvery <= 3600, why);
    FUZZ_CHECK(c.metricsFile.empty() || c.metricsFile[0] == '/', why);
    for (char ch : c.metricsFile) FUZZ_CHECK(ch > ' ' && ch <= '~' && ch != '\\', why);
}

// Lines as std::getline counts them (a last line without '\n' counts).
int lineCount(const std::string& text) {
    int n = 0;
    for (char ch : text) n += ch == '\n';
    if (!text.empty() && text.back() != '\n') ++n;
    return n;
}

void checkResult(const ConfigResult& r, int maxLine, const std::string& input) {
    if (r.ok) {
        FUZZ_CHECK(r.message.empty() && r.line == 0, "ok result with an error: " + r.message);
        checkRanges(r.config, input);
        return;
    }
    FUZZ_CHECK(!r.message.empty(), "error without a message for: " + input);
    FUZZ_CHECK(r.line >= 0 && r.line <= maxLine, "error line out of the input: " + r.message);
    // The server's log line must name the line the operator has to fix.
    if (r.line > 0)
        FUZZ_CHECK(r.message.rfind("line " + std::to_string(r.line) + ": ", 0) == 0, r.message);
}

std::vector<std::string> words(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string w;
    while (in >> w) out.push_back(w);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);

    // The config file, then the ofs.osslib parameters on top of it (as WanPlugin.cc,
    // which stops at a bad file).
    const ConfigResult file = wanio::parseConfigText(text);
    checkResult(file, lineCount(text), text);
    const ConfigResult parms = wanio::parseParms(text, file.ok ? file.config : WanConfig());
    checkResult(parms, 0, text);

    // The settings echoed to the log read back as the same settings. The echo shows an
    // off pacing rate as 0, which the directive spells "off".
    if (file.ok) {
        std::string echo = wanio::describeConfig(file.config) + "\n";
        const std::string zero = "wanio.net.pacing 0\n";
        const std::size_t at = echo.find(zero);
        if (at != std::string::npos) echo.replace(at, zero.size(), "wanio.net.pacing off\n");
        const ConfigResult again = wanio::parseConfigText(echo);
        FUZZ_CHECK(again.ok, "echoed settings rejected: " + again.message + "\n" + echo);
        FUZZ_CHECK(wanio::describeConfig(again.config) == wanio::describeConfig(file.config),
                   "echoed settings read back differently:\n" + echo);
    }

    // "<name> <value>": the directive "wanio.<name> <value>" and the parameter
    // "<name>=<value>" are the same setting, so both must agree. Skipped where the two
    // syntaxes differ on purpose: comments, '=' in a parameter's key, a "wanio." key
    // (stripped from parameters only), and a trailing '\' (a continuation in a file).
    const std::vector<std::string> w = words(text);
    if (w.size() == 2 && w[0][0] != '#' && w[1][0] != '#' && w[0].find('=') == std::string::npos &&
        w[0].compare(0, 6, "wanio.") != 0 && w[1].back() != '\\') {
        const ConfigResult asLine = wanio::parseConfigText("wanio." + w[0] + " " + w[1] + "\n");
        const ConfigResult asParm = wanio::parseParms(w[0] + "=" + w[1]);
        FUZZ_CHECK(asLine.ok == asParm.ok,
                   "directive and parameter disagree: " + asLine.message + " | " + asParm.message);
        if (asLine.ok)
            FUZZ_CHECK(wanio::describeConfig(asLine.config) == wanio::describeConfig(asParm.config),
                       "directive and parameter set different values for: " + text);
    }
    return 0;
}
