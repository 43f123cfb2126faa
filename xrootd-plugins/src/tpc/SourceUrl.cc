#include "SourceUrl.hh"

#include <cstddef>
#include <vector>

namespace wanio {

namespace {

bool startsWith(const std::string& text, const char* prefix) {
    return text.rfind(prefix, 0) == 0;
}

}  // namespace

std::string pullSourceUrl(const std::string& url, bool& tokenPull) {
    tokenPull = false;
    const std::size_t quest = url.find('?');
    if (quest == std::string::npos) return url;
    std::vector<std::string> kept;
    bool token = false;
    std::size_t at = quest + 1;
    while (at <= url.size()) {
        std::size_t end = url.find_first_of("&\t", at);
        if (end == std::string::npos) end = url.size();
        std::string param = url.substr(at, end - at);
        if (startsWith(param, "authz=") && param.size() > 6) token = true;
        if (!param.empty() && !startsWith(param, "tpc.")) kept.push_back(std::move(param));
        at = end + 1;
    }
    if (!token) return url;
    tokenPull = true;
    std::string out = url.substr(0, quest);
    for (std::size_t i = 0; i < kept.size(); ++i) out += (i == 0 ? "?" : "&") + kept[i];
    return out;
}

}  // namespace wanio
