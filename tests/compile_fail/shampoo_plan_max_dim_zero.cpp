// A static Shampoo plan with max_preconditioner_dim 0 fails to compile.
// expect: max_preconditioner_dim must be >= 1
#include <tessel/shampoo/plan.hpp>
using namespace tessel;
constexpr auto bad =
    shampoo::make_plan(shampoo::plan_options(Int<0>{}, Int<1>{}), make_shape(Int<4>{}));
