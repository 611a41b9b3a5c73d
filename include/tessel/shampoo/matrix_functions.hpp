// Forwarding header: the inverse roots moved to <tessel/shampoo/roots/inverse_root.hpp> (one
// header per method beside it); this path keeps existing includes working.
#pragma once

#include "roots/inverse_root.hpp"
