// Forwarding header: moved to <tessel/shampoo/plan/plan.hpp>
// (shampoo/ is grouped by concern); this path keeps existing includes working.
#pragma once

#include "plan/plan.hpp"
