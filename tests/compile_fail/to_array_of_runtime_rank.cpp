// to_array of a run-time-rank tuple fails to compile with advice to use to_vector.
// expect: use to_vector
#include <tessel/core/merge_small_dims.hpp>
#include <tessel/core/shape.hpp>
using namespace tessel;
auto bad = to_array(merge_small_dims(make_shape(2, 3), 8, 1));
