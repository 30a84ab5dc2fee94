// Umbrella header: everything a kernel or a host program needs from the scheduler layer.
#pragma once

#include "tilesched/config.hpp"
#include "tilesched/fast_divmod.hpp"
#include "tilesched/geometry.hpp"
#include "tilesched/scheduler.hpp"
#include "tilesched/tile_summary.hpp"
#include "tilesched/types.hpp"
