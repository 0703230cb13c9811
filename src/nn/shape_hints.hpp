#pragma once

#include <string>

#include "edgeprof/nn.hpp"

namespace edgeprof::detail {

// `graph`'s param text with every layer's output shapes written as ncnn's shape hints
// (-23330=4*n,dims,w,h,c,...), inferred as graph_cost() infers them. ncnn picks some kernels at
// load time from them (which Winograd variant a 3x3 convolution gets), and the graphs ncnn's
// published device times come from carry them. Throws Error as graph_cost() does.
std::string with_shape_hints(const ReferenceGraph& graph);

}  // namespace edgeprof::detail
