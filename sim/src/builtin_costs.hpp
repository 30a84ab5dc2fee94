// The cost tables compiled into the library: (profile name, JSON text of the sim/data file that
// sim/CMakeLists.txt lists for it), in the order it lists them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tilesched::sim::detail {

const std::vector<std::pair<std::string, std::string>>& builtin_cost_tables();

}  // namespace tilesched::sim::detail
