// Forwarding header: moved to <tessel/shampoo/distributed/checkpoint.hpp>
// (shampoo/ is grouped by concern); this path keeps existing includes working.
#pragma once

#include "distributed/checkpoint.hpp"
