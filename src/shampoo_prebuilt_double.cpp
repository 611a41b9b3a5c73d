// The tessel::shampoo_prebuilt library's double instantiations (float: shampoo_prebuilt.cpp).
#include <tessel/shampoo.hpp>

namespace tessel::shampoo {

template class CombinedLinear<double>;
template class ShampooBase<double, exec::Auto>;
template class Shampoo<double>;
template class DistributedShampoo<double>;

}  // namespace tessel::shampoo
