#include "PluginCounters.hh"

namespace wanio {

PluginCounters& PluginCounters::process() {
    static PluginCounters counters;
    return counters;
}

}  // namespace wanio
