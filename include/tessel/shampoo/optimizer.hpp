// The Shampoo optimizer with every preconditioner family: Shampoo<T, Parts...> (basic_shampoo.hpp),
// whose family is chosen at run time by Options::preconditioner and Options::kl_shampoo when none
// is named (AnyPreconditioner, any_preconditioner.hpp), as the CLI, Python and parameter groups
// choose it. A program that names its family, Shampoo<float, Soap>, compiles only that family; it
// may include this header or only basic_shampoo.hpp and its family's header.
//
// Shampoo's step for parameters of type T (float or double), driven by a blocking plan, run by an
// executor: each parameter's gradient is cut into the plan's blocks, and each batch group of equal
// blocks is stepped as one: its elementwise stages are tessel expressions assigned through the
// executor (step/stages.hpp), one pass per stage and segment of equal-shaped blocks
// (plan/segments.hpp), and its dense stages one batched exec::syrk / exec::gemm / exec::eigh per
// group (step/factors.hpp, roots/). Host executors (exec::Auto, the default; OpenMP; Serial) run it
// on host memory; exec::Cuda runs the same code on the device
// (<tessel/shampoo/device_shampoo.cuh>).
#pragma once

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../exec/memory.hpp"
#include "any_preconditioner.hpp"
#include "basic_shampoo.hpp"
#include "options.hpp"
#include "options_check.hpp"
#include "plan/geometry.hpp"
#include "plan/plan.hpp"
#include "plan/segments.hpp"
#include "plan/static_plan.hpp"
#include "preconditioners/eigendecomposed.hpp"
#include "preconditioners/eigenvalue_corrected.hpp"
#include "preconditioners/kl_shampoo.hpp"
#include "preconditioners/kl_soap.hpp"
#include "preconditioners/root_inverse.hpp"
#include "preconditioners/sign_descent.hpp"
#include "preconditioners/spectral_descent.hpp"
#include "roots/inverse_root.hpp"
#include "roots/qr_iteration.hpp"
#include "state/group_state.hpp"
#include "state/quantized.hpp"
#include "state/state_dict.hpp"
#include "step/bounds.hpp"
#include "step/factors.hpp"
#include "step/grafting.hpp"
#include "step/orthogonalize.hpp"
#include "step/scalars.hpp"
#include "step/stages.hpp"

// The tessel::shampoo_prebuilt library (CMake; kernels/shampoo_prebuilt*.cpp) compiles the
// run-time-chosen optimizers once. A translation unit built with TESSEL_SHAMPOO_PREBUILT (the
// library's targets get it) links to them instead of compiling every family's step itself
// (docs/benchmarks.md). A program that names its family compiles that family where it uses it,
// with or without the library.
#if defined(TESSEL_SHAMPOO_PREBUILT)
namespace tessel::shampoo {
extern template class StepCore<float, exec::Auto>;
extern template class StepCore<double, exec::Auto>;
extern template class ShampooStep<float, AnyPreconditioner, exec::Auto>;
extern template class ShampooStep<double, AnyPreconditioner, exec::Auto>;
extern template class BasicShampoo<float, AnyPreconditioner>;
extern template class BasicShampoo<double, AnyPreconditioner>;
}  // namespace tessel::shampoo
#endif
