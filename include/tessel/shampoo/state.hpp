// Forwarding header: moved to <tessel/shampoo/state/state_dict.hpp>
// (shampoo/ is grouped by concern); this path keeps existing includes working.
#pragma once

#include "state/state_dict.hpp"
