// Forwarding header: moved to <tessel/shampoo/state/quantized.hpp>
// (shampoo/ is grouped by concern); this path keeps existing includes working.
#pragma once

#include "state/quantized.hpp"
