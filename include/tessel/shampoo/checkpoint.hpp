// Forwarding header: moved to <tessel/shampoo/state/checkpoint.hpp>
// (shampoo/ is grouped by concern); this path keeps existing includes working.
#pragma once

#include "state/checkpoint.hpp"
