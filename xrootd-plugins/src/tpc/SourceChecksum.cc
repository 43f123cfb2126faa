#include "SourceChecksum.hh"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "XrdCl/XrdClBuffer.hh"
#include "XrdCl/XrdClFileSystem.hh"
#include "XrdCl/XrdClURL.hh"
#include "XrdCl/XrdClXRootDResponses.hh"

namespace wanio {

bool parseAdlerHex(const std::string& text, std::uint32_t& out) {
    if (text.empty() || text.size() > 8) return false;
    char* end = nullptr;
    unsigned long v = std::strtoul(text.c_str(), &end, 16);
    if (*end != '\0') return false;
    out = static_cast<std::uint32_t>(v);
    return true;
}

std::string adlerHex(std::uint32_t value) {
    char buf[9];
    snprintf(buf, sizeof(buf), "%08x", value);
    return buf;
}

ChecksumAnswer querySourceAdler(const std::string& sourceUrl, bool separateChannel) {
    ChecksumAnswer answer;
    XrdCl::URL url(sourceUrl);
    XrdCl::URL server(url);
    if (separateChannel) {
        XrdCl::URL::ParamsMap params = server.GetParams();
        params["xrdcl.intent"] = "checksum";
        server.SetParams(params);
    }
    XrdCl::FileSystem fs(server);
    XrdCl::Buffer arg;
    arg.FromString(url.GetPath());
    XrdCl::Buffer* response = nullptr;
    XrdCl::XRootDStatus st = fs.Query(XrdCl::QueryCode::Checksum, arg, response);
    std::unique_ptr<XrdCl::Buffer> owned(response);
    if (!st.IsOK() || !owned) {
        answer.error = "source checksum query failed: " + st.ToString();
        return answer;
    }
    // Reply: "adler32 0a1b2c3d"
    std::string text = owned->ToString();
    std::size_t space = text.find(' ');
    if (space == std::string::npos || text.compare(0, space, "adler32") != 0) {
        answer.error = "source did not return an adler32 checksum: " + text;
        return answer;
    }
    std::string value = text.substr(space + 1);
    while (!value.empty() && (value.back() == '\0' || value.back() == '\n')) value.pop_back();
    if (!parseAdlerHex(value, answer.adler)) {
        answer.error = "unparsable source checksum: " + text;
        return answer;
    }
    answer.ok = true;
    return answer;
}

SourceChecksum::SourceChecksum(const std::string& sourceUrl)
    : sourceUrl_(sourceUrl), early_(std::async(std::launch::async, [url = sourceUrl] {
          return querySourceAdler(url, true);
      })) {}

ChecksumAnswer SourceChecksum::wait() {
    ChecksumAnswer answer = early_.get();
    if (answer.ok) return answer;
    ChecksumAnswer retry = querySourceAdler(sourceUrl_, false);
    if (!retry.ok) retry.error += " (on its own connection: " + answer.error + ")";
    return retry;
}

}  // namespace wanio
