// The elementwise kernel body: dst(i) = src(i) for i in [begin, end), lanes striding through the
// range. src is a bound expression (an evaluator: src(i) is the element at offset i along the
// innermost loop mode), dst a bound destination (dst.store(i, v)). The host executor runs it with
// SequentialContext wherever it does not use packets; the CUDA executor runs it per thread block.
#pragma once

#include "../../core/config.hpp"
#include "context.hpp"

namespace tessel::exec {

template <class Ctx, class Dst, class Src>
TESSEL_HOST_DEVICE void elementwise_body(Ctx const& ctx, Dst& dst, Src const& src, index_t begin,
                                         index_t end) {
  for (index_t i = begin + ctx.lane(); i < end; i += ctx.lanes()) dst.store(i, src(i));
}

}  // namespace tessel::exec
