// The tessel::shampoo_prebuilt library's double instantiations (float: shampoo_prebuilt.cpp).
#include <tessel/shampoo.hpp>

namespace tessel::shampoo {

template class CombinedLinear<double>;
template class StepCore<double, exec::Auto>;
template class ShampooStep<double, AnyPreconditioner, exec::Auto>;
template class BasicShampoo<double, AnyPreconditioner>;
template class DistributedShampoo<double>;

}  // namespace tessel::shampoo
