// A Shampoo plan refuses parameters of rank above 8 at compile time.
// expect: Shampoo plans take parameters of rank <= 8
#include <tessel/shampoo/plan.hpp>
using namespace tessel;
auto bad = shampoo::make_plan(shampoo::plan_options(), make_shape(1, 1, 1, 1, 1, 1, 1, 1, 1));
