// What a reference graph costs, read from its ncnn param text alone: every blob's shape is
// inferred from the input through each layer as ncnn computes it, and the convolutions and fully
// connected layers are counted. It shares nothing with the generator (graphs.cpp), so a graph
// the generator gets wrong shows here as a count that is off its architecture's published one,
// or as a weight size that does not fit the channels that reach the layer.
//
// The same inference writes the shape hints the generator adds to its graphs
// (with_shape_hints): ncnn chooses some kernels at load time from them, and ncnn's benchmark
// graphs carry them, so a graph without them times differently. A graph that declares hints
// is checked against the inferred shapes.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "edgeprof/error.hpp"
#include "sys/parse.hpp"
#include "edgeprof/nn.hpp"
#include "nn/shape_hints.hpp"

namespace edgeprof {

namespace {

constexpr int kParamMagic = 7767517;
// ncnn writes an array parameter k as key -23300 - k: "-23300=2,-233,-233" is array 0.
constexpr int kArrayKeyBase = -23300;
// ncnn's "as many as are left" (Slice) and "same padding" (Convolution) markers.
constexpr int kRemaining = -233;
constexpr int kSameUpper = -233;
constexpr int kSameLower = -234;
// The array of output shapes ("shape hints") ncnn reads at load time: key -23330, array 30, four
// values per output blob: dims, w, h, c.
constexpr int kShapeHintArray = 30;

// A blob's shape as ncnn's Mat has it: dims 1 is (w), 2 is (w, h), 3 is (w, h, c).
struct Shape {
  int dims = 0;
  long long w = 1, h = 1, c = 1;
  long long size() const { return w * h * c; }
};

std::string to_string(const Shape& s) {
  if (s.dims == 1) return fmt::format("{}", s.w);
  if (s.dims == 2) return fmt::format("{}x{}", s.w, s.h);
  return fmt::format("{}x{}x{}", s.w, s.h, s.c);
}

std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  auto space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; };
  while (i < line.size()) {
    while (i < line.size() && space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !space(line[i])) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<long long> to_integer(std::string_view text) {
  long long v = 0;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// One layer line of the param text.
struct Layer {
  int line = 0;
  std::string type, name;
  std::vector<std::string> in, out;
  std::map<int, std::string> values;               // key=value
  std::map<int, std::vector<std::string>> arrays;  // array key=count,value,...
};

// Walks the layers in order, keeping every blob's shape; throws Error naming the graph and the
// layer at the first thing that is wrong.
class CostCounter {
 public:
  explicit CostCounter(const ReferenceGraph& graph) : graph_(graph) {}

  GraphCost run() {
    std::vector<Layer> layers = parse();
    for (const Layer& l : layers) apply(l);
    check_output();
    return cost_;
  }

  // The param text with each layer's output shapes written as its shape hints (replacing any
  // it had).
  std::string hinted() {
    std::vector<Layer> layers = parse();
    std::string text = fmt::format("{}\n{} {}\n", kParamMagic, layers.size(), blob_count_);
    for (const Layer& l : layers) {
      apply(l);
      std::string hint = fmt::format("{}={}", kArrayKeyBase - kShapeHintArray, 4 * l.out.size());
      for (const auto& b : l.out) {
        const Shape& s = shapes_.at(b);
        hint += fmt::format(",{},{},{},{}", s.dims, s.w, s.h, s.c);
      }
      text += layer_text(l, hint) + "\n";
    }
    check_output();
    return text;
  }

 private:
  void check_output() {
    const auto out = shapes_.find(graph_.output);
    if (out == shapes_.end()) {
      throw Error(fmt::format("reference graph {}: no layer produces the output blob '{}'",
                              graph_.name, graph_.output));
    }
    cost_.output_size = out->second.size();
  }

  // A layer's line as parsed with `hint` for its shape hints, then its other values in key
  // order.
  std::string layer_text(const Layer& l, const std::string& hint) const {
    std::string text = fmt::format("{:<20} {:<16} {} {}", l.type, l.name, l.in.size(), l.out.size());
    for (const auto& b : l.in) text += " " + b;
    for (const auto& b : l.out) text += " " + b;
    text += " " + hint;
    for (const auto& [key, items] : l.arrays) {
      if (key == kShapeHintArray) continue;
      text += fmt::format(" {}={}", kArrayKeyBase - key, items.size());
      for (const auto& v : items) text += "," + v;
    }
    for (const auto& [key, value] : l.values) text += fmt::format(" {}={}", key, value);
    return text;
  }

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw Error(fmt::format("reference graph {}: param line {}: {}", graph_.name, line, what));
  }
  [[noreturn]] void fail(const Layer& l, const std::string& what) const {
    throw Error(fmt::format("reference graph {}: layer {} ({}, param line {}): {}", graph_.name,
                            l.name, l.type, l.line, what));
  }

  std::vector<Layer> parse() {
    std::vector<std::string_view> lines;
    detail::for_each_line(graph_.param, [&](std::string_view line) { lines.push_back(line); });
    const auto magic = lines.empty() ? std::vector<std::string_view>{} : tokens(lines[0]);
    if (magic.size() != 1 || to_integer(magic[0]) != kParamMagic) {
      fail(1, fmt::format("expected the magic number {} of ncnn's param format", kParamMagic));
    }
    const auto counts = lines.size() < 2 ? std::vector<std::string_view>{} : tokens(lines[1]);
    const auto layer_count = counts.size() == 2 ? to_integer(counts[0]) : std::nullopt;
    const auto blob_count = counts.size() == 2 ? to_integer(counts[1]) : std::nullopt;
    if (!layer_count || !blob_count) fail(2, "expected the layer count and the blob count");

    std::vector<Layer> layers;
    std::size_t blobs = 0;
    for (std::size_t i = 2; i < lines.size(); ++i) {
      const auto t = tokens(lines[i]);
      if (t.empty()) continue;
      Layer l;
      l.line = int(i + 1);
      const auto nin = t.size() >= 4 ? to_integer(t[2]) : std::nullopt;
      const auto nout = t.size() >= 4 ? to_integer(t[3]) : std::nullopt;
      if (!nin || !nout || *nin < 0 || *nout < 0 ||
          t.size() < 4 + std::size_t(*nin) + std::size_t(*nout)) {
        fail(l.line, "expected: type name #inputs #outputs inputs... outputs... key=value...");
      }
      l.type = std::string(t[0]);
      l.name = std::string(t[1]);
      std::size_t k = 4;
      for (long long j = 0; j < *nin; ++j) l.in.emplace_back(t[k++]);
      for (long long j = 0; j < *nout; ++j) l.out.emplace_back(t[k++]);
      for (; k < t.size(); ++k) parse_value(l, t[k]);
      blobs += l.out.size();
      layers.push_back(std::move(l));
    }
    if (std::size_t(*layer_count) != layers.size() || std::size_t(*blob_count) != blobs) {
      fail(2, fmt::format("the header says {} layers and {} blobs; the text has {} and {}",
                          *layer_count, *blob_count, layers.size(), blobs));
    }
    blob_count_ = blobs;
    return layers;
  }

  void parse_value(Layer& l, std::string_view token) const {
    const auto eq = token.find('=');
    const auto key = eq == std::string_view::npos ? std::nullopt : to_integer(token.substr(0, eq));
    if (!key) fail(l, fmt::format("'{}' is not key=value", token));
    const std::string_view value = token.substr(eq + 1);
    if (*key > kArrayKeyBase) {
      l.values[int(*key)] = std::string(value);
      return;
    }
    std::vector<std::string> items;
    std::size_t start = 0;
    while (start <= value.size()) {
      const auto comma = value.find(',', start);
      items.emplace_back(
          value.substr(start, comma == std::string_view::npos ? value.npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    const auto n = to_integer(items.front());
    if (!n || *n != static_cast<long long>(items.size()) - 1) {
      fail(l, fmt::format("array parameter '{}' does not start with its length", token));
    }
    items.erase(items.begin());
    l.arrays[kArrayKeyBase - int(*key)] = std::move(items);
  }

  long long get(const Layer& l, int key, long long fallback) const {
    const auto it = l.values.find(key);
    if (it == l.values.end()) return fallback;
    const auto v = to_integer(it->second);
    if (!v) fail(l, fmt::format("parameter {}={} is not an integer", key, it->second));
    return *v;
  }

  long long positive(const Layer& l, int key, long long fallback, const char* what) const {
    const long long v = get(l, key, fallback);
    if (v <= 0) fail(l, fmt::format("{} ({}=) is {}, not a positive number", what, key, v));
    return v;
  }

  // A sliding window: kernel, stride and padding. Convolution and Pooling keep them under
  // different keys in one pattern: a height at its width's key + 10; padding right, top and
  // bottom at the left's + 11, + 10 and + 12; each defaults as ncnn's load_param has it.
  struct Window {
    long long kw, kh, sw, sh, left, right, top, bottom;
  };
  Window window(const Layer& l, int stride_key, int pad_key) const {
    Window w{};
    w.kw = positive(l, 1, 0, "kernel width");
    w.kh = positive(l, 11, w.kw, "kernel height");
    w.sw = positive(l, stride_key, 1, "stride");
    w.sh = positive(l, stride_key + 10, w.sw, "stride height");
    w.left = get(l, pad_key, 0);
    w.right = get(l, pad_key + 11, w.left);
    w.top = get(l, pad_key + 10, w.left);
    w.bottom = get(l, pad_key + 12, w.top);
    return w;
  }

  const Shape& shape(const Layer& l, const std::string& blob) const {
    const auto it = shapes_.find(blob);
    if (it == shapes_.end()) {
      fail(l, fmt::format("reads blob '{}', which no earlier layer produces", blob));
    }
    return it->second;
  }

  void expect_counts(const Layer& l, std::size_t in, std::size_t out) const {
    if (l.in.size() != in || (out > 0 && l.out.size() != out)) {
      fail(l, fmt::format("has {} inputs and {} outputs; a {} layer takes {} and gives {}",
                          l.in.size(), l.out.size(), l.type, in,
                          out > 0 ? fmt::format("{}", out) : "one or more"));
    }
  }

  void apply(const Layer& l) {
    for (const auto& b : l.in) {
      shape(l, b);
      if (!consumed_.insert(b).second) {
        fail(l, fmt::format("reads blob '{}', which another layer reads: ncnn needs a Split", b));
      }
    }
    std::vector<Shape> out = infer(l);
    check_hints(l, out);
    for (std::size_t i = 0; i < l.out.size(); ++i) {
      if (!shapes_.emplace(l.out[i], out[i]).second) {
        fail(l, fmt::format("writes blob '{}', which an earlier layer writes", l.out[i]));
      }
    }
  }

  // Shape hints a layer declares must be the shapes it gives: ncnn would choose its kernels for
  // the declared ones.
  void check_hints(const Layer& l, const std::vector<Shape>& out) const {
    const auto it = l.arrays.find(kShapeHintArray);
    if (it == l.arrays.end()) return;
    const auto& v = it->second;
    std::string declared, inferred;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (i) inferred += ", ";
      inferred += to_string(out[i]);
    }
    bool same = v.size() == 4 * out.size();
    for (std::size_t i = 0; i < v.size() / 4; ++i) {
      const auto dims = to_integer(v[4 * i]), w = to_integer(v[4 * i + 1]),
                 h = to_integer(v[4 * i + 2]), c = to_integer(v[4 * i + 3]);
      const Shape s{int(dims.value_or(0)), w.value_or(0), h.value_or(0), c.value_or(0)};
      if (i) declared += ", ";
      declared += to_string(s);
      same = same && i < out.size() && s.dims == out[i].dims && s.w == out[i].w &&
             s.h == out[i].h && s.c == out[i].c;
    }
    if (!same) {
      fail(l, fmt::format("its shape hints ({}=) say {}; the layer gives {}",
                          kArrayKeyBase - kShapeHintArray, declared, inferred));
    }
  }

  std::vector<Shape> infer(const Layer& l) {
    const std::string& t = l.type;
    if (t == "Input") return {input(l)};
    if (t == "Convolution") return {convolution(l, false)};
    if (t == "ConvolutionDepthWise") return {convolution(l, true)};
    if (t == "InnerProduct") return {inner_product(l)};
    if (t == "Pooling") return {pooling(l)};
    if (t == "Reshape") return {reshape(l)};
    if (t == "BinaryOp") return {binary_op(l)};
    if (t == "Concat") return {concat(l)};
    if (t == "Slice") return slice(l);
    if (t == "ShuffleChannel") return {shuffle_channel(l)};
    if (t == "Split") {
      expect_counts(l, 1, 0);
      return std::vector<Shape>(l.out.size(), shape(l, l.in[0]));
    }
    if (t == "Eltwise") return {elementwise(l)};
    if (t == "Flatten") {
      expect_counts(l, 1, 1);
      return {Shape{1, shape(l, l.in[0]).size(), 1, 1}};
    }
    static const std::set<std::string> same_shape = {
        "ReLU", "Sigmoid", "Swish", "HardSigmoid", "HardSwish", "LRN", "Softmax", "Dropout"};
    if (same_shape.count(t)) {
      expect_counts(l, 1, 1);
      return {shape(l, l.in[0])};
    }
    fail(l, "graph_cost does not know this layer type");
  }

  Shape input(const Layer& l) {
    expect_counts(l, 0, 1);
    if (l.out[0] != graph_.input) {
      fail(l, fmt::format("writes blob '{}'; the graph's input is '{}'", l.out[0], graph_.input));
    }
    const Shape s{3, graph_.width, graph_.height, graph_.channels};
    const Shape declared{3, get(l, 0, s.w), get(l, 1, s.h), get(l, 2, s.c)};
    if (s.w <= 0 || s.h <= 0 || s.c <= 0 || declared.w != s.w || declared.h != s.h ||
        declared.c != s.c) {
      fail(l, fmt::format("declares {}; the graph is fed {}", to_string(declared), to_string(s)));
    }
    return s;
  }

  Shape convolution(const Layer& l, bool depthwise) {
    expect_counts(l, 1, 1);
    const Shape& x = shape(l, l.in[0]);
    const long long outputs = positive(l, 0, 0, "num_output");
    const Window w = window(l, 3, 4);
    const long long dw = positive(l, 2, 1, "dilation");
    const long long dh = positive(l, 12, dw, "dilation height");
    const long long group = depthwise ? positive(l, 7, 1, "group") : 1;
    const long long weights = get(l, 6, 0);
    if (get(l, 19, 0) != 0) fail(l, "dynamic weights (19=1) are not a reference graph's");

    // ncnn runs a 1x1 convolution of a vector as a fully connected layer.
    const bool vector = x.dims == 1 && w.kw == 1 && w.kh == 1;
    if (x.dims != 3 && !vector) {
      fail(l, fmt::format("its input is {} (dims {}); a convolution takes w x h x c", to_string(x),
                          x.dims));
    }
    const long long in = vector ? x.w : x.c;
    if (in % group != 0 || outputs % group != 0) {
      fail(l, fmt::format("{} input and {} output channels do not divide into {} groups", in,
                          outputs, group));
    }
    const long long expected = outputs * (in / group) * w.kw * w.kh;
    if (weights != expected) {
      fail(l, fmt::format("weight_data_size 6={} is not {} outputs x {} input channels per "
                          "group x {}x{} kernel = {}",
                          weights, outputs, in / group, w.kw, w.kh, expected));
    }
    Shape y{vector ? 1 : 3, vector ? outputs : 0, 1, vector ? 1 : outputs};
    if (!vector) {
      const long long ew = dw * (w.kw - 1) + 1, eh = dh * (w.kh - 1) + 1;
      auto extent = [&](long long size, long long k, long long s, long long lo, long long hi) {
        // ncnn's SAME padding pads only when the input falls short of the last window.
        if (lo == kSameUpper || lo == kSameLower) return std::max(size, (size - 1) / s * s + k);
        if (lo < 0 || hi < 0) fail(l, fmt::format("padding {} / {} is not supported", lo, hi));
        return size + lo + hi;
      };
      y.w = (extent(x.w, ew, w.sw, w.left, w.right) - ew) / w.sw + 1;
      y.h = (extent(x.h, eh, w.sh, w.top, w.bottom) - eh) / w.sh + 1;
      if (y.w <= 0 || y.h <= 0) {
        fail(l, fmt::format("a {}x{} kernel does not fit its {} input", w.kw, w.kh, to_string(x)));
      }
    }
    cost_.params += weights + (get(l, 5, 0) ? outputs : 0);
    cost_.macs += y.w * y.h * weights;
    return y;
  }

  Shape inner_product(const Layer& l) {
    expect_counts(l, 1, 1);
    const Shape& x = shape(l, l.in[0]);
    const long long outputs = positive(l, 0, 0, "num_output");
    const long long weights = get(l, 2, 0);
    if (weights != outputs * x.size()) {
      fail(l, fmt::format("weight_data_size 2={} is not {} outputs x {} inputs ({}) = {}", weights,
                          outputs, x.size(), to_string(x), outputs * x.size()));
    }
    cost_.params += weights + (get(l, 1, 0) ? outputs : 0);
    cost_.macs += weights;
    return Shape{1, outputs, 1, 1};
  }

  Shape pooling(const Layer& l) {
    expect_counts(l, 1, 1);
    const Shape& x = shape(l, l.in[0]);
    const long long type = get(l, 0, 0);
    if (type != 0 && type != 1) {
      fail(l, fmt::format("pooling type 0={} is not max (0) or average (1)", type));
    }
    if (x.dims != 3) fail(l, fmt::format("its input is {}; pooling takes w x h x c", to_string(x)));
    if (get(l, 4, 0)) return Shape{1, x.c, 1, 1};  // global: one value per channel
    if (get(l, 7, 0)) fail(l, "adaptive pooling (7=1) is not supported");
    const Window w = window(l, 2, 3);
    const long long mode = get(l, 5, 0);
    if (w.left < 0 || w.right < 0 || w.top < 0 || w.bottom < 0 || mode < 0 || mode > 3) {
      fail(l, fmt::format("padding {} {} {} {} or pad mode 5={} is not supported", w.left, w.right,
                          w.top, w.bottom, mode));
    }
    // The padded extent as ncnn's Pooling::make_padding computes it. Mode 0 ("full", Caffe's)
    // pads the tail up to a whole stride, so the output size rounds up.
    auto padded = [&](long long size, long long k, long long s, long long lo, long long hi) {
      if (mode == 0) {
        const long long tail = (size + lo + hi - k) % s;
        return size + lo + hi + (tail ? s - tail : 0);
      }
      if (mode == 1) return size + lo + hi;
      return std::max(size, k + (size - 1) / s * s);  // SAME: pads only when it is short
    };
    Shape y{3, 0, 0, x.c};
    y.w = (padded(x.w, w.kw, w.sw, w.left, w.right) - w.kw) / w.sw + 1;
    y.h = (padded(x.h, w.kh, w.sh, w.top, w.bottom) - w.kh) / w.sh + 1;
    if (y.w <= 0 || y.h <= 0) {
      fail(l, fmt::format("a {}x{} window does not fit its {} input", w.kw, w.kh, to_string(x)));
    }
    return y;
  }

  Shape reshape(const Layer& l) {
    expect_counts(l, 1, 1);
    const Shape& x = shape(l, l.in[0]);
    if (l.values.count(11) || l.values.count(6)) {
      fail(l, "4-D and expression reshapes are not supported");
    }
    long long d[3] = {get(l, 0, kRemaining), get(l, 1, kRemaining), get(l, 2, kRemaining)};
    const int dims = d[0] == kRemaining ? 0 : d[1] == kRemaining ? 1 : d[2] == kRemaining ? 2 : 3;
    if (dims == 0) fail(l, "gives no shape (0=)");
    const long long from[3] = {x.w, x.h, x.c};
    long long known = 1;
    int infer = -1;
    for (int i = 0; i < dims; ++i) {
      if (d[i] == 0) d[i] = from[i];  // 0 keeps the input's size on that axis
      if (d[i] == -1) {
        if (infer >= 0) fail(l, "infers more than one axis (-1)");
        infer = i;
      } else if (d[i] <= 0) {
        fail(l, fmt::format("axis size {} is not supported", d[i]));
      } else {
        known *= d[i];
      }
    }
    if (infer >= 0) d[infer] = x.size() / known;
    Shape y{dims, d[0], dims > 1 ? d[1] : 1, dims > 2 ? d[2] : 1};
    if (y.size() != x.size()) {
      fail(l, fmt::format("reshapes {} ({} values) to {} ({} values)", to_string(x), x.size(),
                          to_string(y), y.size()));
    }
    return y;
  }

  // ncnn's broadcast: the input with fewer dims is expanded (a vector as long as the other's
  // channels becomes one value per channel), then each axis must agree or be 1.
  Shape binary_op(const Layer& l) {
    if (get(l, 1, 0)) {
      expect_counts(l, 1, 1);
      return shape(l, l.in[0]);
    }
    expect_counts(l, 2, 1);
    Shape a = shape(l, l.in[0]), b = shape(l, l.in[1]);
    const int dims = std::max(a.dims, b.dims);
    auto expand = [dims](Shape s, const Shape& other) {
      if (s.dims == dims) return s;
      if (dims == 2) return s.w == other.h ? Shape{2, 1, s.w, 1} : Shape{2, s.w, 1, 1};
      if (s.dims == 1) return s.w == other.c ? Shape{3, 1, 1, s.w} : Shape{3, s.w, 1, 1};
      return Shape{3, 1, s.w, s.h};
    };
    const Shape ea = expand(a, b), eb = expand(b, a);
    auto axis = [&](long long p, long long q) {
      if (p != q && p != 1 && q != 1) {
        fail(l, fmt::format("cannot broadcast {} with {}", to_string(a), to_string(b)));
      }
      return std::max(p, q);
    };
    return Shape{dims, axis(ea.w, eb.w), axis(ea.h, eb.h), axis(ea.c, eb.c)};
  }

  // Concat and Slice along axis 0: a vector's length or a w x h x c blob's channels.
  long long& along(const Layer& l, Shape& s, long long axis) const {
    if (axis != 0 && axis != -s.dims) {
      fail(l, fmt::format("axis {} is not supported (only the first)", axis));
    }
    if (s.dims == 1) return s.w;
    if (s.dims == 3) return s.c;
    fail(l, fmt::format("its input is {}; supported are vectors and w x h x c", to_string(s)));
  }

  Shape concat(const Layer& l) {
    if (l.in.empty() || l.out.size() != 1) fail(l, "takes one or more inputs and gives one");
    const long long axis = get(l, 0, 0);
    Shape first = shape(l, l.in[0]);
    along(l, first, axis) = 0;
    long long total = 0;
    for (const auto& b : l.in) {
      Shape s = shape(l, b);
      total += along(l, s, axis);
      along(l, s, axis) = 0;
      if (s.dims != first.dims || s.w != first.w || s.h != first.h || s.c != first.c) {
        fail(l, fmt::format("cannot join {} to {} along axis {}", to_string(shape(l, b)),
                            to_string(shape(l, l.in[0])), axis));
      }
    }
    along(l, first, axis) = total;
    return first;
  }

  std::vector<Shape> slice(const Layer& l) {
    expect_counts(l, 1, 0);
    if (l.values.count(2)) fail(l, "slicing by indices (2=) is not supported");
    const auto it = l.arrays.find(0);
    if (it == l.arrays.end() || it->second.size() != l.out.size()) {
      fail(l, fmt::format("needs one slice size (array 0, -23300=) per output ({})", l.out.size()));
    }
    const long long axis = get(l, 1, 0);
    Shape x = shape(l, l.in[0]);
    const long long total = along(l, x, axis);
    std::vector<Shape> out;
    long long taken = 0;
    for (std::size_t i = 0; i < it->second.size(); ++i) {
      const auto n = to_integer(it->second[i]);
      long long size = n ? *n : 0;
      if (size == kRemaining) size = (total - taken) / static_cast<long long>(l.out.size() - i);
      if (size <= 0) fail(l, fmt::format("slice size '{}' is not supported", it->second[i]));
      Shape s = x;
      along(l, s, axis) = size;
      out.push_back(s);
      taken += size;
    }
    if (taken != total) {
      fail(l, fmt::format("slices {} of {} along axis {}", taken, total, axis));
    }
    return out;
  }

  // Caffe's element-wise sum, product or max of inputs of one shape.
  Shape elementwise(const Layer& l) {
    if (l.in.empty() || l.out.size() != 1) fail(l, "takes one or more inputs and gives one");
    const Shape& x = shape(l, l.in[0]);
    for (const auto& b : l.in) {
      const Shape& s = shape(l, b);
      if (s.dims != x.dims || s.w != x.w || s.h != x.h || s.c != x.c) {
        fail(l, fmt::format("its inputs are {} and {}", to_string(x), to_string(s)));
      }
    }
    return x;
  }

  Shape shuffle_channel(const Layer& l) {
    expect_counts(l, 1, 1);
    const Shape& x = shape(l, l.in[0]);
    const long long groups = positive(l, 0, 1, "group");
    if (x.dims != 3 || x.c % groups != 0) {
      fail(l, fmt::format("{} channels do not divide into {} groups", to_string(x), groups));
    }
    return x;
  }

  const ReferenceGraph& graph_;
  std::map<std::string, Shape> shapes_;
  std::set<std::string> consumed_;
  GraphCost cost_;
  std::size_t blob_count_ = 0;
};

}  // namespace

GraphCost graph_cost(const ReferenceGraph& graph) { return CostCounter(graph).run(); }

namespace detail {
std::string with_shape_hints(const ReferenceGraph& graph) { return CostCounter(graph).hinted(); }
}  // namespace detail

}  // namespace edgeprof
