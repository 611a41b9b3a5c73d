// Forwarding header: moved to <tessel/shampoo/distributed/distributed.hpp>
// (shampoo/ is grouped by concern); this path keeps existing includes working.
#pragma once

#include "distributed/distributed.hpp"
