// One Shampoo segment's device kernels, static against dynamic: the gather (G = grad + l2 * param)
// and the parameter update (w <- w - lr (d * scale + wd * w)) of the (4, 9) block at column 24 of
// a (4, 33) parameter (segment 3 of shampoo_mlp's plan: rows of 9 with stride 33, so the
// executor's loop nest keeps two modes), instantiated once with the static plan's segment layouts
// (static_segment_t: every extent and stride an Int<>) and once with the run-time plan's (index_t,
// padded to rank 8). Compiled, never run: docs/design.md ("From shape to kernel: a Shampoo group")
// shows what ptxas reports for each:
//   nvcc -std=c++20 --expt-relaxed-constexpr -O3 -arch=sm_90 -Xptxas -v -Iinclude \
//        -isystem /usr/include/eigen3 -c tools/bench/compile_time/shampoo_group_ptxas.cu
#include <tessel/exec/cuda.cuh>
#include <tessel/shampoo/plan/static_plan.hpp>
#include <tessel/shampoo/step/stages.hpp>

namespace tessel::shampoo {

constexpr auto plan = make_plan(plan_options(Int<24>{}, Int<1>{}, 1),
                                make_shape(Int<32>{}, Int<17>{}), make_shape(Int<4>{}, Int<33>{}));
using SP = static_plan<plan>;

template <class Segment>
void segment_kernels(Segment const& seg, float* param, float const* grad, float* state,
                     float* direction, float* scale) {
  exec::Cuda const gpu{};
  StepScalars<float> s;
  s.l2 = 0.01f;
  s.decoupled = 0.01f;
  s.lr = 0.1f;
  auto const p = make_device_tensor(param + seg.offset, seg.param_layout());
  stages::gather_gradient(gpu, make_device_tensor(state, seg.state_layout()),
                          make_device_tensor(grad + seg.offset, seg.param_layout()), p, s.l2);
  stages::apply_update(gpu, p,
                       stages::plain_update(make_device_tensor(direction, seg.state_layout()),
                                            make_device_tensor(scale, seg.slot_layout()), p, s),
                       s.lr);
}

void instantiate(float* param, float const* grad, float* state, float* direction, float* scale) {
  // Static: segment 3 of the plan (parameter 1's block at column 24).
  auto const fixed = static_segment<SP, 3>();
  segment_kernels(fixed, param, grad, state, direction, scale);
  // Dynamic: the same segment from the run-time plan.
  auto const dynamic = runtime_segment(SP::segments[3], plan.groups[3].shape);
  segment_kernels(dynamic, param, grad, state, direction, scale);
}

}  // namespace tessel::shampoo

int main() {
  return 0;
}
