// The reference CNN graphs, written by edgeprof in ncnn's param format: the standard
// architectures, as their papers and reference implementations define them, with the names
// and input sizes of ncnn's benchncnn, so that this host's times compare with the times ncnn
// publishes for real devices. Batch normalisation is folded into the convolutions (as an
// optimised deployment graph has it); weights are not part of a param file (benchncnn loads
// zeros, and so does the runner).

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "nn/shape_hints.hpp"

namespace edgeprof {

namespace {

enum class Act { none, relu, sigmoid, hardswish, hardsigmoid, swish };

// Builds a graph layer by layer; tracks each blob's channels (for weight sizes) and inserts
// the Split layers ncnn needs where a blob feeds several layers.
class Graph {
 public:
  std::string input(int w, int h, int c) {
    const std::string out = "data";
    add("Input", {}, out, c, fmt::format("0={} 1={} 2={}", w, h, c));
    return out;
  }

  std::string conv(const std::string& x, int out, int k, int s = 1, int p = -1, Act act = Act::relu,
                   int group = 1) {
    if (p < 0) p = k / 2;
    const int in = channels(x);
    const long weights = long(out) * (in / group) * k * k;
    std::string params = fmt::format("0={} 1={} 3={} 4={} 5=1 6={}", out, k, s, p, weights);
    if (group > 1) params += fmt::format(" 7={}", group);
    params += activation_params(act);
    const std::string y = next("conv");
    add(group > 1 ? "ConvolutionDepthWise" : "Convolution", {x}, y, out, params);
    return after(y, act);
  }
  std::string dw(const std::string& x, int k, int s, Act act = Act::relu) {
    const int c = channels(x);
    return conv(x, c, k, s, k / 2, act, c);
  }

  // Pooling rounds the output size up (ncnn's default pad mode, Caffe's rule).
  std::string max_pool(const std::string& x, int k, int s, int p = 0) {
    return pool(x, 0, k, s, p);
  }
  std::string avg_pool(const std::string& x, int k, int s, int p = 0) {
    return pool(x, 1, k, s, p);
  }
  // Global average pooling to a vector of C values, for fully connected layers.
  std::string global_average(const std::string& x) {
    const std::string p = next("gap");
    add("Pooling", {x}, p, channels(x), "0=1 4=1");
    return p;
  }
  // Global average pooling to a (1, 1, C) blob, so 1x1 convolutions apply to it.
  std::string global_pool(const std::string& x) {
    const std::string p = global_average(x);
    const std::string r = next("reshape");
    add("Reshape", {p}, r, channels(x), "0=1 1=1 2=-1");
    return r;
  }

  std::string fc(const std::string& x, int out, Act act = Act::none) {
    const std::string y = next("fc");
    add("InnerProduct", {x}, y, out,
        fmt::format("0={} 1=1 2={}{}", out, long(out) * flat_size(x), activation_params(act)));
    flat_[y] = out;
    return after(y, act);
  }

  std::string add_(const std::string& a, const std::string& b) { return binary(a, b, 0); }
  std::string mul(const std::string& a, const std::string& b) { return binary(a, b, 2); }

  std::string concat(const std::vector<std::string>& xs) {
    int c = 0;
    for (const auto& x : xs) c += channels(x);
    const std::string y = next("concat");
    add("Concat", xs, y, c, "0=0");
    return y;
  }

  // Splits the channels in two halves.
  std::pair<std::string, std::string> halves(const std::string& x) {
    const std::string a = next("half"), b = next("half");
    Layer l{"Slice", next_layer(), {x}, {a, b}, "-23300=2,-233,-233 1=0"};
    layers_.push_back(l);
    channels_[a] = channels_[b] = channels(x) / 2;
    return {a, b};
  }

  std::string shuffle(const std::string& x, int groups) {
    const std::string y = next("shuffle");
    add("ShuffleChannel", {x}, y, channels(x), fmt::format("0={}", groups));
    return y;
  }

  std::string lrn(const std::string& x) {
    const std::string y = next("lrn");
    add("LRN", {x}, y, channels(x), "0=0 1=5 2=1.000000e-04 3=7.500000e-01");
    return y;
  }

  std::string relu(const std::string& x) {
    const std::string y = next("relu");
    add("ReLU", {x}, y, channels(x), "");
    return y;
  }

  std::string flatten(const std::string& x) {
    const std::string y = next("flatten");
    add("Flatten", {x}, y, channels(x), "");
    return y;
  }

  // Squeeze-and-excitation as an exported graph has it: global average pooling to a vector,
  // two fully connected layers, and the channels scaled by the result (broadcast).
  std::string squeeze_excite(const std::string& x, int reduced, Act inner, Act gate) {
    const std::string r = fc(global_average(x), reduced, inner);
    const std::string e = fc(r, channels(x), gate);
    return mul(x, e);
  }

  std::string softmax(const std::string& x) {
    const std::string y = "output";
    add("Softmax", {x}, y, channels(x), "0=0 1=1");
    return y;
  }

  // The param text, with Split layers where a blob has several consumers.
  std::string text() const {
    std::map<std::string, int> uses;
    for (const auto& l : layers_) {
      for (const auto& i : l.in) ++uses[i];
    }
    std::vector<Layer> out;
    std::map<std::string, int> taken;
    std::vector<Layer> layers = layers_;
    std::size_t blobs = 0;
    int splits = 0;
    for (auto& l : layers) {
      for (auto& i : l.in) {
        if (uses[i] > 1) i = fmt::format("{}_sp{}", i, taken[i]++);
      }
      out.push_back(l);
      blobs += l.out.size();
      for (const auto& o : l.out) {
        if (uses[o] < 2) continue;
        Layer s{"Split", fmt::format("splitncnn_{}", splits++), {o}, {}, ""};
        for (int k = 0; k < uses[o]; ++k) s.out.push_back(fmt::format("{}_sp{}", o, k));
        blobs += s.out.size();
        out.push_back(std::move(s));
      }
    }
    std::string text = fmt::format("7767517\n{} {}\n", out.size(), blobs);
    for (const auto& l : out) {
      text += fmt::format("{:<20} {:<16} {} {}", l.type, l.name, l.in.size(), l.out.size());
      for (const auto& i : l.in) text += " " + i;
      for (const auto& o : l.out) text += " " + o;
      if (!l.params.empty()) text += " " + l.params;
      text += "\n";
    }
    return text;
  }

  int channels(const std::string& x) const {
    const auto it = channels_.find(x);
    if (it == channels_.end()) throw Error(fmt::format("reference graph: no blob {}", x));
    return it->second;
  }

  // The flattened size of a blob entering a fully connected layer: set by flat().
  void flat(const std::string& x, int size) { flat_[x] = size; }

 private:
  struct Layer {
    std::string type, name;
    std::vector<std::string> in, out;
    std::string params;
  };

  std::string pool(const std::string& x, int type, int k, int s, int p) {
    const std::string y = next("pool");
    add("Pooling", {x}, y, channels(x), fmt::format("0={} 1={} 2={} 3={}", type, k, s, p));
    return y;
  }

  std::string binary(const std::string& a, const std::string& b, int op) {
    const std::string y = next(op == 0 ? "add" : "mul");
    add("BinaryOp", {a, b}, y, channels(a), fmt::format("0={}", op));
    return y;
  }

  static std::string activation_params(Act act) {
    switch (act) {
      case Act::relu: return " 9=1";
      case Act::sigmoid: return " 9=4";
      default: return "";
    }
  }

  // The other activations are layers of their own, as in ncnn's benchmark graphs: Swish cannot
  // be fused into a convolution, and the published MobileNet v3 graph runs hard-swish as a
  // layer too (each one more pass over its blob).
  std::string after(const std::string& y, Act act) {
    const char* type = act == Act::swish         ? "Swish"
                       : act == Act::hardsigmoid ? "HardSigmoid"
                       : act == Act::hardswish   ? "HardSwish"
                                                 : nullptr;
    if (!type) return y;
    const std::string z = next("act");
    add(type, {y}, z, channels(y), act == Act::swish ? "" : "0=1.666667e-01 1=5.000000e-01");
    return z;
  }

  long flat_size(const std::string& x) const {
    const auto it = flat_.find(x);
    return it != flat_.end() ? it->second : channels(x);
  }

  void add(const char* type, std::vector<std::string> in, const std::string& out, int c,
           std::string params) {
    layers_.push_back(Layer{type, next_layer(), std::move(in), {out}, std::move(params)});
    channels_[out] = c;
  }
  std::string next(const char* what) { return fmt::format("{}{}", what, blob_++); }
  std::string next_layer() { return fmt::format("l{}", layer_++); }

  std::vector<Layer> layers_;
  std::map<std::string, int> channels_;
  std::map<std::string, long> flat_;
  int blob_ = 0;
  int layer_ = 0;
};

// Every layer carries its output shapes (ncnn's shape hints), as ncnn's benchmark graphs do:
// ncnn chooses a 3x3 convolution's Winograd variant from them at load time, and without them
// ResNet-18 took 1.10-1.18x the time of ncnn's graph (which has them) in three runs on this
// project's host.
ReferenceGraph finish(const char* name, int w, int h, const Graph& g, const char* about) {
  ReferenceGraph graph{name, w, h, 3, "data", "output", g.text(), about};
  graph.param = detail::with_shape_hints(graph);
  return graph;
}

// SqueezeNet 1.1 (Iandola et al. 2016, the v1.1 revision): fire modules of squeeze 1x1 and
// parallel expand 1x1 and 3x3. The last convolution pads by 1 (16x16 outputs instead of 14x14,
// 7% of the multiply-accumulates) as ncnn's benchmark graph has it, though the official v1.1
// model does not: the published times are of that graph.
ReferenceGraph squeezenet() {
  Graph g;
  std::string x = g.input(227, 227, 3);
  x = g.conv(x, 64, 3, 2, 0);
  x = g.max_pool(x, 3, 2);
  auto fire = [&](int squeeze, int expand) {
    const std::string s = g.conv(x, squeeze, 1);
    x = g.concat({g.conv(s, expand, 1), g.conv(s, expand, 3)});
  };
  fire(16, 64);
  fire(16, 64);
  x = g.max_pool(x, 3, 2);
  fire(32, 128);
  fire(32, 128);
  x = g.max_pool(x, 3, 2);
  fire(48, 192);
  fire(48, 192);
  fire(64, 256);
  fire(64, 256);
  x = g.conv(x, 1000, 1, 1, 1);
  x = g.softmax(g.global_pool(x));
  return finish("squeezenet", 227, 227, g, "SqueezeNet 1.1, 227x227");
}

// MobileNet v1 (Howard et al. 2017), width 1.0: depthwise-separable convolutions.
ReferenceGraph mobilenet() {
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.conv(x, 32, 3, 2);
  const int plan[][2] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1}, {512, 2}, {512, 1},
                         {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
  for (const auto& [c, s] : plan) x = g.conv(g.dw(x, 3, s), c, 1);
  x = g.global_pool(x);
  x = g.softmax(g.conv(x, 1000, 1, 1, 0, Act::none));
  return finish("mobilenet", 224, 224, g, "MobileNet v1 1.0, 224x224");
}

// MobileNet v2 (Sandler et al. 2018), width 1.0: inverted residuals with linear bottlenecks;
// ReLU, as in the widely deployed Caffe conversion, rather than ReLU6. That conversion (and
// ncnn's benchmark graph, made from it) also gives the first block, of expansion 1, a 1x1
// "expansion" convolution (32 to 32 channels at 112x112, 4% of the multiply-accumulates) that
// the paper's reference implementation leaves out.
ReferenceGraph mobilenet_v2() {
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.conv(x, 32, 3, 2, 1, Act::relu);
  const int plan[][4] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                         {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& [t, c, n, s] : plan) {
    for (int i = 0; i < n; ++i) {
      const int in = g.channels(x);
      std::string y = g.conv(x, in * t, 1, 1, 0, Act::relu);
      y = g.dw(y, 3, i == 0 ? s : 1, Act::relu);
      y = g.conv(y, c, 1, 1, 0, Act::none);
      x = (i > 0) ? g.add_(x, y) : y;
    }
  }
  x = g.conv(x, 1280, 1, 1, 0, Act::relu);
  x = g.global_pool(x);
  x = g.softmax(g.conv(x, 1000, 1, 1, 0, Act::none));
  return finish("mobilenet_v2", 224, 224, g, "MobileNet v2 1.0, 224x224");
}

// ResNet-18 and ResNet-50 (He et al. 2016) as the Caffe models that ncnn's benchmark graphs come
// from (ResNet-50 is the authors' own): a bottleneck block downsamples in its first 1x1
// convolution (torchvision's "v1.5" moves the stride to the 3x3 one: 6% more multiply-
// accumulates), and every stage's first block has a projection shortcut, the first stage's too
// (where the paper's ResNet-18 adds its input unchanged: 0.7% fewer).
std::string resnet_stem(Graph& g) {
  std::string x = g.input(224, 224, 3);
  x = g.conv(x, 64, 7, 2, 3);
  return g.max_pool(x, 3, 2);
}

ReferenceGraph resnet(const char* name, bool bottleneck, const int (&blocks)[4]) {
  Graph g;
  std::string x = resnet_stem(g);
  const int widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int i = 0; i < blocks[stage]; ++i) {
      const int s = (stage > 0 && i == 0) ? 2 : 1;
      const int c = widths[stage];
      const int out = bottleneck ? 4 * c : c;
      std::string y;
      if (bottleneck) {
        y = g.conv(x, c, 1, s, 0);
        y = g.conv(y, c, 3);
        y = g.conv(y, out, 1, 1, 0, Act::none);
      } else {
        y = g.conv(x, c, 3, s);
        y = g.conv(y, c, 3, 1, 1, Act::none);
      }
      const std::string shortcut = i == 0 ? g.conv(x, out, 1, s, 0, Act::none) : x;
      x = g.relu(g.add_(shortcut, y));
    }
  }
  x = g.global_pool(x);
  x = g.softmax(g.conv(x, 1000, 1, 1, 0, Act::none));
  return finish(name, 224, 224, g, bottleneck ? "ResNet-50, 224x224" : "ResNet-18, 224x224");
}

// AlexNet (Krizhevsky et al. 2012) as Caffe's reference model: grouped convolutions and LRN.
ReferenceGraph alexnet() {
  Graph g;
  std::string x = g.input(227, 227, 3);
  x = g.max_pool(g.lrn(g.conv(x, 96, 11, 4, 0)), 3, 2);
  x = g.max_pool(g.lrn(g.conv(x, 256, 5, 1, 2, Act::relu, 2)), 3, 2);
  x = g.conv(x, 384, 3);
  x = g.conv(x, 384, 3, 1, 1, Act::relu, 2);
  x = g.max_pool(g.conv(x, 256, 3, 1, 1, Act::relu, 2), 3, 2);
  x = g.flatten(x);
  g.flat(x, 256 * 6 * 6);
  x = g.fc(x, 4096, Act::relu);
  x = g.fc(x, 4096, Act::relu);
  x = g.softmax(g.fc(x, 1000));
  return finish("alexnet", 227, 227, g, "AlexNet (Caffe's reference model), 227x227");
}

// VGG-16 (Simonyan and Zisserman 2014), configuration D.
ReferenceGraph vgg16() {
  Graph g;
  std::string x = g.input(224, 224, 3);
  const int plan[][2] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  for (const auto& [c, n] : plan) {
    for (int i = 0; i < n; ++i) x = g.conv(x, c, 3);
    x = g.max_pool(x, 2, 2);
  }
  x = g.flatten(x);
  g.flat(x, 512 * 7 * 7);
  x = g.fc(x, 4096, Act::relu);
  x = g.fc(x, 4096, Act::relu);
  x = g.softmax(g.fc(x, 1000));
  return finish("vgg16", 224, 224, g, "VGG-16, 224x224");
}

// GoogLeNet (Szegedy et al. 2014), Inception v1, without the auxiliary classifiers.
ReferenceGraph googlenet() {
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.lrn(g.max_pool(g.conv(x, 64, 7, 2, 3), 3, 2));
  x = g.conv(x, 64, 1);
  x = g.max_pool(g.lrn(g.conv(x, 192, 3)), 3, 2);
  auto inception = [&](int c1, int r3, int c3, int r5, int c5, int proj) {
    x = g.concat({g.conv(x, c1, 1), g.conv(g.conv(x, r3, 1), c3, 3),
                  g.conv(g.conv(x, r5, 1), c5, 5), g.conv(g.max_pool(x, 3, 1, 1), proj, 1)});
  };
  inception(64, 96, 128, 16, 32, 32);
  inception(128, 128, 192, 32, 96, 64);
  x = g.max_pool(x, 3, 2);
  inception(192, 96, 208, 16, 48, 64);
  inception(160, 112, 224, 24, 64, 64);
  inception(128, 128, 256, 24, 64, 64);
  inception(112, 144, 288, 32, 64, 64);
  inception(256, 160, 320, 32, 128, 128);
  x = g.max_pool(x, 3, 2);
  inception(256, 160, 320, 32, 128, 128);
  inception(384, 192, 384, 48, 128, 128);
  x = g.global_pool(x);
  x = g.softmax(g.conv(x, 1000, 1, 1, 0, Act::none));
  return finish("googlenet", 224, 224, g, "GoogLeNet (Inception v1), 224x224");
}

// An inverted-residual block (MobileNet v2's, with MnasNet's and EfficientNet's options):
// expand 1x1, depthwise k x k, optional squeeze-and-excitation, project 1x1, residual when the
// shape is kept.
std::string inverted_residual(Graph& g, const std::string& x, int expand, int k, int s, int out,
                              Act act, int se_reduced = 0) {
  const int in = g.channels(x);
  std::string y = expand == 1 ? x : g.conv(x, in * expand, 1, 1, 0, act);
  y = g.dw(y, k, s, act);
  if (se_reduced > 0) y = g.squeeze_excite(y, se_reduced, act, Act::sigmoid);
  y = g.conv(y, out, 1, 1, 0, Act::none);
  return (s == 1 && in == out) ? g.add_(x, y) : y;
}

// MnasNet 1.0 as torchvision's mnasnet1_0 (Tan et al. 2019, the B1 search result without
// squeeze-and-excitation).
ReferenceGraph mnasnet() {
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.conv(x, 32, 3, 2);
  x = g.dw(x, 3, 1);
  x = g.conv(x, 16, 1, 1, 0, Act::none);
  const int plan[][5] = {{3, 3, 2, 24, 3}, {3, 5, 2, 40, 3}, {6, 5, 2, 80, 3},
                         {6, 3, 1, 96, 2}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}};
  for (const auto& [e, k, s, c, n] : plan) {
    for (int i = 0; i < n; ++i) x = inverted_residual(g, x, e, k, i == 0 ? s : 1, c, Act::relu);
  }
  x = g.conv(x, 1280, 1, 1, 0);
  x = g.global_pool(x);
  x = g.softmax(g.conv(x, 1000, 1, 1, 0, Act::none));
  return finish("mnasnet", 224, 224, g, "MnasNet 1.0 (torchvision's mnasnet1_0), 224x224");
}

// EfficientNet-B0 (Tan and Le 2019): MBConv blocks with squeeze-and-excitation, Swish.
ReferenceGraph efficientnet_b0() {
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.conv(x, 32, 3, 2, 1, Act::swish);
  const int plan[][5] = {{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2},  {6, 5, 2, 40, 2}, {6, 3, 2, 80, 3},
                         {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}};
  for (const auto& [e, k, s, c, n] : plan) {
    for (int i = 0; i < n; ++i) {
      const int se = std::max(1, g.channels(x) / 4);
      x = inverted_residual(g, x, e, k, i == 0 ? s : 1, c, Act::swish, se);
    }
  }
  x = g.conv(x, 1280, 1, 1, 0, Act::swish);
  x = g.global_pool(x);
  x = g.softmax(g.conv(x, 1000, 1, 1, 0, Act::none));
  return finish("efficientnet_b0", 224, 224, g, "EfficientNet-B0, 224x224");
}

// ShuffleNet v1 1x with 3 groups (Zhang et al. 2017), stages of 240, 480 and 960 channels.
// A unit: a grouped 1x1 convolution, a channel shuffle, a 3x3 depthwise convolution and a
// grouped 1x1 convolution, added to the input; a stage's first unit strides 2 and concatenates
// its branch to the input average-pooled 3x3. The first unit's first 1x1 convolution is not
// grouped (its 24 input channels are too few, the paper says). The bottleneck is a quarter of
// the branch's output, as in ncnn's benchmark graph; the paper's is a quarter of the unit's,
// which widens the three first units (8% more multiply-accumulates).
ReferenceGraph shufflenet() {
  constexpr int groups = 3;
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.max_pool(g.conv(x, 24, 3, 2), 3, 2);
  const int plan[][2] = {{240, 4}, {480, 8}, {960, 4}};
  for (const auto& [c, n] : plan) {
    for (int i = 0; i < n; ++i) {
      const int in = g.channels(x);
      const bool first = i == 0;
      const int out = first ? c - in : c;
      const int squeeze_groups = in == 24 ? 1 : groups;
      std::string y = g.conv(x, out / 4, 1, 1, 0, Act::relu, squeeze_groups);
      if (squeeze_groups > 1) y = g.shuffle(y, groups);
      y = g.dw(y, 3, first ? 2 : 1, Act::none);
      y = g.conv(y, out, 1, 1, 0, Act::none, groups);
      x = g.relu(first ? g.concat({g.avg_pool(x, 3, 2), y}) : g.add_(x, y));
    }
  }
  x = g.softmax(g.fc(g.global_average(x), 1000));
  return finish("shufflenet", 224, 224, g, "ShuffleNet v1 1x, 3 groups, 224x224");
}

// ShuffleNet v2 1.0x (Ma et al. 2018): channel split, shuffle, two branches.
ReferenceGraph shufflenet_v2() {
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.max_pool(g.conv(x, 24, 3, 2), 3, 2);
  const int plan[][2] = {{116, 4}, {232, 8}, {464, 4}};
  for (const auto& [c, n] : plan) {
    for (int i = 0; i < n; ++i) {
      const int half = c / 2;
      std::string left, right;
      if (i == 0) {
        left = g.conv(g.dw(x, 3, 2, Act::none), half, 1, 1, 0);
        right = g.conv(g.dw(g.conv(x, half, 1, 1, 0), 3, 2, Act::none), half, 1, 1, 0);
      } else {
        auto [a, b] = g.halves(x);
        left = a;
        right = g.conv(g.dw(g.conv(b, half, 1, 1, 0), 3, 1, Act::none), half, 1, 1, 0);
      }
      x = g.shuffle(g.concat({left, right}), 2);
    }
  }
  x = g.conv(x, 1024, 1, 1, 0);
  x = g.global_pool(x);
  x = g.softmax(g.conv(x, 1000, 1, 1, 0, Act::none));
  return finish("shufflenet_v2", 224, 224, g, "ShuffleNet v2 1.0x, 224x224");
}

// RegNetY-400MF (Radosavovic et al. 2020): a 32-channel stem, then stages of widths 48, 104,
// 208 and 440 and depths 1, 3, 6 and 6. A block: a 1x1 convolution, a 3x3 group convolution of
// group width 8 (stride 2 in a stage's first block), squeeze-and-excitation to a quarter of the
// block's input width, and a 1x1 convolution (bottleneck ratio 1), added to the input or, in a
// stage's first block, to its 1x1 projection.
ReferenceGraph regnety_400m() {
  constexpr int group_width = 8;
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.conv(x, 32, 3, 2);
  const int plan[][2] = {{48, 1}, {104, 3}, {208, 6}, {440, 6}};
  for (const auto& [w, n] : plan) {
    for (int i = 0; i < n; ++i) {
      const int s = i == 0 ? 2 : 1;
      std::string y = g.conv(x, w, 1, 1, 0);
      y = g.conv(y, w, 3, s, 1, Act::relu, w / group_width);
      y = g.squeeze_excite(y, g.channels(x) / 4, Act::relu, Act::sigmoid);
      y = g.conv(y, w, 1, 1, 0, Act::none);
      const std::string shortcut = i == 0 ? g.conv(x, w, 1, s, 0, Act::none) : x;
      x = g.relu(g.add_(shortcut, y));
    }
  }
  x = g.softmax(g.fc(g.global_average(x), 1000));
  return finish("regnety_400m", 224, 224, g, "RegNetY-400MF, 224x224");
}

// MobileNet v3 Large 1.0 (Howard et al. 2019): hard-swish, squeeze-and-excitation to a quarter
// of the expanded channels with a hard sigmoid gate. The 160-channel stage is ncnn's benchmark
// graph's, not the paper's: a stride-1 block of expansion 672 at 14x14 before the stride-2 one,
// then one block of 960 instead of two (13% more multiply-accumulates, 6% fewer parameters);
// the published times are of that graph.
ReferenceGraph mobilenet_v3() {
  Graph g;
  std::string x = g.input(224, 224, 3);
  x = g.conv(x, 16, 3, 2, 1, Act::hardswish);
  // kernel, expanded channels, out, squeeze-excite, hard-swish, stride
  const int plan[][6] = {{3, 16, 16, 0, 0, 1},    {3, 64, 24, 0, 0, 2},   {3, 72, 24, 0, 0, 1},
                         {5, 72, 40, 1, 0, 2},    {5, 120, 40, 1, 0, 1},  {5, 120, 40, 1, 0, 1},
                         {3, 240, 80, 0, 1, 2},   {3, 200, 80, 0, 1, 1},  {3, 184, 80, 0, 1, 1},
                         {3, 184, 80, 0, 1, 1},   {3, 480, 112, 1, 1, 1}, {3, 672, 112, 1, 1, 1},
                         {5, 672, 160, 1, 1, 1},  {5, 672, 160, 1, 1, 2}, {5, 960, 160, 1, 1, 1}};
  for (const auto& [k, exp, out, se, hs, s] : plan) {
    const Act act = hs ? Act::hardswish : Act::relu;
    const int in = g.channels(x);
    std::string y = exp == in ? x : g.conv(x, exp, 1, 1, 0, act);
    y = g.dw(y, k, s, act);
    if (se) y = g.squeeze_excite(y, exp / 4, Act::relu, Act::hardsigmoid);
    y = g.conv(y, out, 1, 1, 0, Act::none);
    x = (s == 1 && in == out) ? g.add_(x, y) : y;
  }
  x = g.conv(x, 960, 1, 1, 0, Act::hardswish);
  x = g.global_pool(x);
  x = g.conv(x, 1280, 1, 1, 0, Act::hardswish);
  x = g.softmax(g.conv(x, 1000, 1, 1, 0, Act::none));
  return finish("mobilenet_v3", 224, 224, g, "MobileNet v3 Large 1.0, 224x224");
}

}  // namespace

// In the order of ncnn's published tables.
const std::vector<ReferenceGraph>& reference_graphs() {
  static const std::vector<ReferenceGraph> graphs = {squeezenet(),
                                                     mobilenet(),
                                                     mobilenet_v2(),
                                                     mobilenet_v3(),
                                                     shufflenet(),
                                                     shufflenet_v2(),
                                                     mnasnet(),
                                                     efficientnet_b0(),
                                                     regnety_400m(),
                                                     googlenet(),
                                                     resnet("resnet18", false, {2, 2, 2, 2}),
                                                     alexnet(),
                                                     vgg16(),
                                                     resnet("resnet50", true, {3, 4, 6, 3})};
  return graphs;
}

}  // namespace edgeprof
