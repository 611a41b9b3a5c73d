// The tessel::shampoo_prebuilt library: the host optimizers most programs use, compiled once
// (explicit instantiations); float here, double in shampoo_prebuilt_double.cpp, so that a
// parallel build compiles the two at once (each is a whole Shampoo step, minutes of compiler
// time). Programs linked to it see TESSEL_SHAMPOO_PREBUILT and the matching `extern template`
// declarations (shampoo/optimizer.hpp, shampoo/distributed/distributed.hpp), so they do not
// compile the step themselves. tessel stays header-only without it.
#include <tessel/shampoo.hpp>

namespace tessel::shampoo {

template class CombinedLinear<float>;
template class StepCore<float, exec::Auto>;
template class ShampooStep<float, AnyPreconditioner, exec::Auto>;
template class BasicShampoo<float, AnyPreconditioner>;
template class DistributedShampoo<float>;

}  // namespace tessel::shampoo
