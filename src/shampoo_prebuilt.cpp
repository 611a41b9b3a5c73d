// The tessel::shampoo_prebuilt library: the host optimizers most programs use, compiled once
// (explicit instantiations). Programs linked to it see TESSEL_SHAMPOO_PREBUILT and the matching
// `extern template` declarations (shampoo/optimizer.hpp, shampoo/distributed/distributed.hpp),
// so they do not compile the step themselves. tessel stays header-only without it.
#include <tessel/shampoo.hpp>

namespace tessel::shampoo {

template class CombinedLinear<float>;
template class CombinedLinear<double>;
template class ShampooBase<float, exec::Auto>;
template class ShampooBase<double, exec::Auto>;
template class Shampoo<float>;
template class Shampoo<double>;
template class DistributedShampoo<float>;
template class DistributedShampoo<double>;

}  // namespace tessel::shampoo
