// Umbrella header of the simulator library.
#pragma once

#include "tilesched/sim/attention.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/describe.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/output_file.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "tilesched/sim/value_limits.hpp"
#include "tilesched/sim/workload_io.hpp"
