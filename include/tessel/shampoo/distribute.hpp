// Forwarding header: moved to <tessel/shampoo/plan/distribute.hpp>
// (shampoo/ is grouped by concern); this path keeps existing includes working.
#pragma once

#include "plan/distribute.hpp"
