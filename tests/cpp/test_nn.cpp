// The nn kind of speed: the reference graphs, the runner's output, the arithmetic of a
// device's nn speed, this host's rating (measured by a stand-in and for real) and its cache,
// and the catalog's devices emulated at their nn speed by default.
#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "edgeprof/catalog.hpp"
#include "edgeprof/error.hpp"
#include "edgeprof/nn.hpp"
#include "edgeprof/plan.hpp"
#include "edgeprof/slice.hpp"
#include "helpers.hpp"

using namespace edgeprof;
using Catch::Contains;
using namespace edgeprof::test;

namespace {

// |value / published - 1| <= tolerance, with the figures when it is not.
void check_within(const char* what, double value, double published, double tolerance) {
  INFO(what << ": " << value << " against the published " << published << " ("
            << 100 * (value / published - 1) << "%; allowed " << 100 * tolerance << "%)");
  CHECK(std::abs(value / published - 1) <= tolerance);
}

// `graph` fed a width x height input (its Input layer rewritten, the rest as generated), for
// figures published at another input size.
// The graph fed another input size; its shape hints (-23330=...), which are for its own size,
// are dropped.
ReferenceGraph with_input(ReferenceGraph graph, int width, int height) {
  for (auto at = graph.param.find(" -23330="); at != std::string::npos;
       at = graph.param.find(" -23330=", at)) {
    graph.param.erase(at, graph.param.find_first_of(" \n", at + 1) - at);
  }
  const std::string from =
      "0=" + std::to_string(graph.width) + " 1=" + std::to_string(graph.height);
  const auto at = graph.param.find(from);
  REQUIRE(at != std::string::npos);
  graph.param.replace(at, from.size(),
                      "0=" + std::to_string(width) + " 1=" + std::to_string(height));
  graph.width = width;
  graph.height = height;
  return graph;
}

// A stand-in for the Python interpreter: prints what the runner prints, for every graph.
std::string fake_python(const test::FakeTree& dir, double ms) {
  std::string body = "#!/bin/sh\necho 'runtime ncnn 1.0.test (stand-in)'\necho 'a warning ncnn may print'\n";
  for (const auto& g : reference_graphs()) {
    body += "echo '" + g.name + " " + std::to_string(ms) + " " + std::to_string(ms * 0.9) + " " +
            std::to_string(ms * 1.2) + "'\n";
  }
  dir.file("/python", body);
  const std::string path = dir.root() + "/python";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

}  // namespace

TEST_CASE("nn speed: geometric mean of host / device time, and its leave-one-out error",
          "[nn]") {
  // Ratios device / host: a 2, b 4 (c only on the device, d only on the host: not used).
  const NnSpeed s = nn_speed({{"a", 10}, {"b", 40}, {"c", 7}}, {{"a", 5}, {"b", 10}, {"d", 1}});
  REQUIRE(s.ratios.size() == 2);
  CHECK(s.ratios.at("a") == Approx(2));
  CHECK(s.ratios.at("b") == Approx(4));
  CHECK(s.core_speed == Approx(1 / std::sqrt(8.0)));
  // Leaving a out, b's ratio 4 predicts a at 20 ms against 10 (+100%); leaving b out, a's
  // ratio 2 predicts b at 20 ms against 40 (-50%).
  CHECK(s.loo_median_error == Approx(0.75));
  CHECK(s.loo_worst_error == Approx(1.0));
  CHECK(s.precision == "fp32");
  CHECK_THAT(describe(s), Contains("0.3536 of a host core") && Contains("2 ncnn graphs") &&
                              Contains("median error 75%") && Contains("worst 100%"));

  // One model: no leave-one-out.
  const NnSpeed one = nn_speed({{"a", 10}}, {{"a", 5}}, "fp16");
  CHECK(one.core_speed == Approx(0.5));
  CHECK(one.loo_median_error == 0);
  CHECK(one.precision == "fp16");
  CHECK_THAT(describe(one), !Contains("leave-one"));

  CHECK_THROWS_WITH(nn_speed({{"a", 10}}, {{"b", 5}}), Contains("no model has both"));
  CHECK_THROWS_WITH(nn_speed({{"a", -1}}, {{"a", 5}}), Contains("device's time of a is -1"));
  CHECK_THROWS_WITH(nn_speed({{"a", 1}}, {{"a", NAN}}), Contains("this host's time of a"));
  // A precision no table is in (was kept as given: "int3").
  CHECK_THROWS_WITH(nn_speed({{"a", 10}}, {{"a", 5}}, "int3"),
                    Contains("precision 'int3' is not fp32, fp16 or int8"));
  CHECK(nn_speed({{"a", 10}}, {{"a", 5}}, "").precision == "fp32");  // a device's unsaid one
  CHECK(is_nn_precision("int8"));
  CHECK_FALSE(is_nn_precision("FP32"));
}

TEST_CASE("the interval of a device's time: Student's t of the held-out log errors",
          "[nn][interval]") {
  // Ratios 1, 2, 4: held out, each is predicted from the others' geometric mean, off by
  // log factors -1.5 ln 2, 0, +1.5 ln 2 (mean 0), whose standard deviation is 1.5 ln 2; the
  // ratios' own (log 1, 2, 4 about their mean) is ln 2, two thirds of it.
  const NnSpeed s = nn_speed({{"a", 1}, {"b", 2}, {"c", 4}}, {{"a", 1}, {"b", 1}, {"c", 1}});
  CHECK(s.loo_log_sd == Approx(1.5 * std::log(2.0)));
  const std::optional<TimeInterval> i = time_interval(s);
  REQUIRE(i);
  CHECK(i->level == 0.9);
  CHECK(i->models == 3);
  const double t = 2.919986;  // Student's t, 2 degrees of freedom, 95th percentile
  // The prediction interval of a fourth model: t x s x sqrt(1 + 1/3), s = ln 2.
  CHECK(i->high == Approx(std::exp(t * std::log(2.0) * std::sqrt(4.0 / 3.0))).epsilon(1e-5));
  CHECK(i->low == Approx(1 / i->high));
  CHECK(i->emulation_log_sd == 0);
  // With the emulation's spread e: t x sqrt(s^2 (1 + 1/3) + e^2).
  const std::optional<TimeInterval> e = time_interval(s, 0.9, 0.2);
  REQUIRE(e);
  CHECK(e->emulation_log_sd == 0.2);
  CHECK(e->high ==
        Approx(std::exp(t * std::sqrt(std::pow(std::log(2.0), 2) * 4.0 / 3.0 + 0.04)))
            .epsilon(1e-5));
  // A projected time's spread p from the board's speed-up adds as a third independent term.
  const std::optional<TimeInterval> p = time_interval(s, 0.9, 0.2, 0.3);
  REQUIRE(p);
  CHECK(p->projection_log_sd == 0.3);
  CHECK(p->high ==
        Approx(std::exp(t * std::sqrt(std::pow(std::log(2.0), 2) * 4.0 / 3.0 + 0.04 + 0.09)))
            .epsilon(1e-5));
  CHECK(p->low == Approx(1 / p->high));
  CHECK(e->projection_log_sd == 0);
  for (double bad : {-0.1, double(NAN), double(INFINITY)}) {
    CHECK_THROWS_WITH(time_interval(s, 0.9, 0, bad), Contains("projection spread"));
    CHECK_THROWS_WITH(time_interval(s, 0.9, bad), Contains("emulation spread"));
  }
  const std::optional<TimeInterval> half = time_interval(s, 0.5);
  REQUIRE(half);
  CHECK(half->high < i->high);
  CHECK_THAT(describe(s), Contains("a device time within 0.10-10.35x the emulated one (90% "
                                   "interval, estimated)"));
  // All alike: no spread, an interval of one point.
  const NnSpeed alike = nn_speed({{"a", 2}, {"b", 4}, {"c", 6}}, {{"a", 1}, {"b", 2}, {"c", 3}});
  CHECK(time_interval(alike)->high == Approx(1));
  // Too few models for a spread, a probed device's vector speed, a level that is not a share.
  CHECK_FALSE(time_interval(nn_speed({{"a", 1}, {"b", 2}}, {{"a", 1}, {"b", 1}})));
  NnSpeed vector = s;
  vector.basis = "vector";
  CHECK_FALSE(time_interval(vector));
  // A speed with a memory term has its fit's two parameters: t of n - 2 degrees of freedom, a
  // wider interval for the same spread; with three models, none.
  NnSpeed four = nn_speed({{"a", 1}, {"b", 2}, {"c", 4}, {"d", 2}},
                          {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}});
  NnSpeed memory = four;
  memory.memory_mb_per_ms = 0.5;
  REQUIRE(time_interval(memory));
  const double s4 = four.loo_log_sd * 3 / 4;
  CHECK(time_interval(four)->high ==
        Approx(std::exp(2.353363 * s4 * std::sqrt(1.25))).epsilon(1e-5));
  CHECK(time_interval(memory)->high ==
        Approx(std::exp(2.919986 * s4 * std::sqrt(1.25))).epsilon(1e-5));
  NnSpeed three = s;
  three.memory_mb_per_ms = 0.5;
  CHECK_FALSE(time_interval(three));
  for (double bad : {0.0, 1.0, 90.0, double(NAN)}) {
    CHECK_THROWS_WITH(time_interval(s, bad), Contains("between 0 and 1 (0.9 for 90%)"));
  }
}

TEST_CASE("a run's device interval: in the report, read back, and said in its text",
          "[nn][interval][report]") {
  Result r;
  r.exit_code = 0;
  r.wall_time_s = 2.0;
  r.device = make_device("board", 1, 0.5, "256MiB");
  r.host = host_info();
  CHECK(result_from_json(to_json(r)).device_interval == std::nullopt);
  CHECK_THAT(to_text(r), !Contains("on the device"));
  TimeInterval i;
  i.low = 0.5;
  i.high = 1.5;
  i.models = 14;
  r.device_interval = i;
  const Result back = result_from_json(to_json(r));
  REQUIRE(back.device_interval);
  CHECK(back.device_interval->low == 0.5);
  CHECK(back.device_interval->high == 1.5);
  CHECK(back.device_interval->models == 14);
  CHECK(back == r);
  CHECK_THAT(to_text(r), Contains("on the device 1.000 .. 3.000 s wall (90% interval: "
                                  "0.50-1.50x the measured time, from the speed's held-out "
                                  "errors over 14 graphs"));
  CHECK_THAT(to_text(r), Contains("emulation's own error not included"));
  // With the emulation's spread (a plan scaled by this host's own share): kept and said.
  r.device_interval->emulation_log_sd = 0.12;
  r.plan.emulation_log_sd = 0.12;
  const Result spread = result_from_json(to_json(r));
  REQUIRE(spread.device_interval);
  CHECK(spread.device_interval->emulation_log_sd == 0.12);
  CHECK(spread.plan.emulation_log_sd == 0.12);
  CHECK_THAT(to_text(r), Contains("and the emulation's spread on this host (sd 0.12 in log "
                                  "time)"));
  // A projected time's interval carries the board's speed-up's spread: kept and said.
  r.device_interval->projection_log_sd = 0.15;
  const Result projected = result_from_json(to_json(r));
  REQUIRE(projected.device_interval);
  CHECK(projected.device_interval->projection_log_sd == 0.15);
  CHECK(spread.device_interval->projection_log_sd == 0);
  CHECK_THAT(to_text(r), Contains("over 14 graphs, the board's speed-up's spread (sd 0.15) and "
                                  "the emulation's spread"));
}

TEST_CASE("the runner's output: one line per graph, warnings ignored", "[nn][parse]") {
  const NnRating r = parse_nn_output(
      "runtime ncnn 1.0.20261020 (Python 3.11.7)\n"
      "some warning from ncnn\n"
      "squeezenet 23.6272 17.7366 39.9038\n"
      "mobilenet 39.1 32.4 44.2\r\n"
      "not_a_graph 1 2 3\n");
  CHECK(r.runtime == "ncnn 1.0.20261020 (Python 3.11.7)");
  REQUIRE(r.host_ms.size() == 2);
  CHECK(r.host_ms.at("squeezenet") == Approx(23.6272));
  CHECK(r.host_ms.at("mobilenet") == Approx(39.1));
  CHECK_THROWS_WITH(parse_nn_output("mobilenet abc 1 2\n", "runner"),
                    Contains("runner") && Contains("'abc'"));
  CHECK_THROWS_WITH(parse_nn_output("mobilenet 0 1 2\n"), Contains("not a positive"));
  CHECK_THROWS_WITH(parse_nn_output("Traceback\n  oops\n", "runner"),
                    Contains("no graph was measured") && Contains("oops"));
  CHECK(r.cpu_ms.empty());  // a runner that reports no CPU time (older, or a stand-in)
}

TEST_CASE("the runner's CPU time per inference: a line per graph after its time", "[nn][parse]") {
  const NnRating r = parse_nn_output(
      "runtime ncnn 1.0.20261020 (Python 3.11.7)\n"
      "squeezenet 23.6 17.7 39.9\n"
      "cpu squeezenet 11.8\n"
      "mobilenet 39.1 32.4 44.2\n"
      "cpu not_a_graph 3\n");
  REQUIRE(r.host_ms.size() == 2);
  REQUIRE(r.cpu_ms.size() == 1);
  CHECK(r.cpu_ms.at("squeezenet") == Approx(11.8));
  CHECK_THROWS_WITH(parse_nn_output("squeezenet 1 1 1\ncpu squeezenet -2\n", "runner"),
                    Contains("the CPU time of squeezenet is '-2'"));
  CHECK_THROWS_WITH(parse_nn_output("squeezenet 1 1 1\ncpu squeezenet nan\n", "runner"),
                    Contains("not a positive number"));
}

TEST_CASE("the reference graphs are well-formed ncnn param text", "[nn]") {
  std::set<std::string> names;
  for (const ReferenceGraph& g : reference_graphs()) {
    INFO(g.name);
    CHECK(names.insert(g.name).second);
    CHECK(g.width > 0);
    CHECK(g.channels == 3);
    std::istringstream in(g.param);
    int magic = 0, layers = 0, blobs = 0;
    in >> magic >> layers >> blobs;
    CHECK(magic == 7767517);
    std::string line;
    std::getline(in, line);
    std::set<std::string> produced, consumed;
    int seen = 0, produced_count = 0;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      ++seen;
      std::istringstream l(line);
      std::string type, name;
      int nin = 0, nout = 0;
      l >> type >> name >> nin >> nout;
      for (int i = 0; i < nin; ++i) {
        std::string b;
        l >> b;
        INFO(line);
        CHECK(produced.count(b) == 1);     // produced before it is used
        CHECK(consumed.insert(b).second);  // by one layer only (Split fans out)
      }
      for (int i = 0; i < nout; ++i) {
        std::string b;
        l >> b;
        CHECK(produced.insert(b).second);
        ++produced_count;
      }
    }
    CHECK(seen == layers);
    CHECK(produced_count == blobs);
    CHECK(produced.count(g.input) == 1);
    CHECK(produced.count(g.output) == 1);
    CHECK(consumed.count(g.output) == 0);
  }
  CHECK(names.count("mobilenet_v2") == 1);
  CHECK(names.size() >= 10);
}

// ncnn picks a 3x3 convolution's Winograd variant at load time from the shapes a layer declares
// (-23330=4*n,dims,w,h,c...), and ncnn's benchmark graphs declare them on every layer: without
// them ResNet-18 timed 1.10-1.18x ncnn's graph (which has them) here.
TEST_CASE("every layer of a reference graph declares its output shapes, as ncnn's do", "[nn]") {
  for (const ReferenceGraph& g : reference_graphs()) {
    INFO(g.name);
    std::istringstream in(g.param);
    std::string line;
    std::getline(in, line);
    std::getline(in, line);
    int layers = 0, hinted = 0;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      ++layers;
      if (line.find(" -23330=") != std::string::npos) ++hinted;
    }
    CHECK(hinted == layers);
    CHECK_NOTHROW(graph_cost(g));  // the declared shapes are the inferred ones
  }
  const auto& graphs = reference_graphs();
  const auto resnet18 = std::find_if(graphs.begin(), graphs.end(),
                                     [](const ReferenceGraph& g) { return g.name == "resnet18"; });
  REQUIRE(resnet18 != graphs.end());
  // The stem: 224x224x3 in, a 7x7 convolution by 2 to 112x112x64, a vector of 1000 out.
  CHECK_THAT(resnet18->param, Contains("data -23330=4,3,224,224,3 ") &&
                                  Contains("-23330=4,3,112,112,64 0=64 1=7") &&
                                  Contains("output -23330=4,3,1,1,1000"));
}

TEST_CASE("the reference graphs are benchncnn's, in the order of its published tables", "[nn]") {
  std::vector<std::string> names;
  for (const ReferenceGraph& g : reference_graphs()) names.push_back(g.name);
  CHECK(names == std::vector<std::string>{"squeezenet", "mobilenet", "mobilenet_v2", "mobilenet_v3",
                                          "shufflenet", "shufflenet_v2", "mnasnet",
                                          "efficientnet_b0", "regnety_400m", "googlenet",
                                          "resnet18", "alexnet", "vgg16", "resnet50"});
}

TEST_CASE("graph_cost: shapes, parameters and multiply-accumulates of a small graph", "[nn]") {
  // By hand: an 8x8x3 input; a 3x3 convolution padded 1 to 8x8x4 (4*3*9 = 108 weights + 4
  // biases; 64 outputs x 108 = 6912 MACs); 3x3 max pooling by 2 rounds up, (8 - 3) / 2 = 2.5,
  // to 4x4 (ncnn's and Caffe's rule; PyTorch's would be 3x3); a 1x1 convolution in 2 groups to 4
  // channels (4 * 2 = 8 weights, no bias; 16 x 8 = 128 MACs) joined to its input, 4x4x8; that
  // scaled per channel by its own global average (a vector of 8, broadcast); a global average,
  // then a fully connected layer to 10 (80 weights + 10 biases; 80 MACs).
  ReferenceGraph g{"tiny", 8, 8, 3, "data", "output", R"(7767517
12 14
Input                in    0 1 data 0=8 1=8 2=3
Convolution          c1    1 1 data a 0=4 1=3 4=1 5=1 6=108 9=1
Pooling              p1    1 1 a b 0=0 1=3 2=2
Split                s1    1 2 b b0 b1
ConvolutionDepthWise g1    1 1 b0 c 0=4 1=1 6=8 7=2
Concat               cat   2 1 b1 c d 0=0
Split                s2    1 2 d d0 d1
Pooling              gap   1 1 d0 e 0=1 4=1
BinaryOp             mul   2 1 d1 e g 0=2
Pooling              gap2  1 1 g h 0=1 4=1
InnerProduct         fc    1 1 h f 0=10 1=1 2=80
Softmax              prob  1 1 f output 0=0 1=1
)", "a test graph"};
  const GraphCost c = graph_cost(g);
  CHECK(c.params == 108 + 4 + 8 + 80 + 10);
  CHECK(c.macs == 6912 + 128 + 80);
  CHECK(c.output_size == 10);

  // Fed a 9x9 input instead, the pooling gives 4x4 exactly and the rest is unchanged but the
  // first convolution's 81 outputs: 81 x 108 = 8748 MACs.
  const GraphCost nine = graph_cost(with_input(g, 9, 9));
  CHECK(nine.macs == 8748 + 128 + 80);
  CHECK(nine.params == c.params);
}

TEST_CASE("graph_cost: a malformed graph is an Error naming the graph, the layer and the fault",
          "[nn]") {
  const std::string head = "7767517\n3 3\nInput in 0 1 data 0=8 1=8 2=3\n";
  auto graph = [&](const std::string& text) {
    return ReferenceGraph{"broken", 8, 8, 3, "data", "output", text, ""};
  };
  // The weight size does not fit the channels that reach the layer: 4 x 3 x 3x3 = 108.
  CHECK_THROWS_WITH(graph_cost(graph(head + "Convolution c1 1 1 data a 0=4 1=3 4=1 6=100\n"
                                            "Softmax prob 1 1 a output\n")),
                    Contains("reference graph broken") &&
                        Contains("layer c1 (Convolution, param line 4)") &&
                        Contains("weight_data_size 6=100") && Contains("= 108"));
  CHECK_THROWS_WITH(graph_cost(graph(head + "ReLU r 1 1 nothing a\nSoftmax prob 1 1 a output\n")),
                    Contains("layer r (ReLU") && Contains("reads blob 'nothing'"));
  CHECK_THROWS_WITH(graph_cost(graph(head + "Frobnicate f 1 1 data a\nSoftmax p 1 1 a output\n")),
                    Contains("layer f (Frobnicate") && Contains("does not know this layer type"));
  CHECK_THROWS_WITH(graph_cost(graph(head + "ReLU r 1 1 data a\nSoftmax p 1 1 data output\n")),
                    Contains("layer p (Softmax") && Contains("needs a Split"));
  CHECK_THROWS_WITH(
      graph_cost(graph(head + "ReLU r 1 1 data a\n")),
      Contains("broken") && Contains("says 3 layers and 3 blobs") && Contains("has 2 and 2"));
  CHECK_THROWS_WITH(graph_cost(graph("7767518\n" + head.substr(8))), Contains("magic number"));
  CHECK_THROWS_WITH(
      graph_cost(graph(head + "Pooling p 1 1 data a 1=three\nSoftmax s 1 1 a output\n")),
      Contains("layer p (Pooling") && Contains("1=three is not an integer"));
  CHECK_THROWS_WITH(graph_cost(graph(head + "ReLU r 1 1 data a\nSoftmax s 1 1 a out\n")),
                    Contains("no layer produces the output blob 'output'"));
  CHECK_THROWS_WITH(
      graph_cost(ReferenceGraph{"broken", 16, 16, 3, "data", "output",
                                head + "ReLU r 1 1 data a\nSoftmax s 1 1 a output\n", ""}),
      Contains("declares 8x8x3; the graph is fed 16x16x3"));
  CHECK_THROWS_AS(graph_cost(graph("")), Error);
  // A declared shape that is not the layer's (ncnn would choose kernels for the wrong one).
  CHECK_THROWS_WITH(
      graph_cost(graph(head + "Convolution c1 1 1 data a -23330=4,3,8,8,5 0=4 1=3 4=1 6=108\n"
                              "Softmax prob 1 1 a output\n")),
      Contains("layer c1 (Convolution") && Contains("shape hints (-23330=) say 8x8x5") &&
          Contains("gives 8x8x4"));
  CHECK_NOTHROW(
      graph_cost(graph(head + "Convolution c1 1 1 data a -23330=4,3,8,8,4 0=4 1=3 4=1 6=108\n"
                              "Softmax prob 1 1 a output -23330=4,3,8,8,4\n")));
}

// Each graph's parameters and multiply-accumulates (MACs) as graph_cost reads them from the
// param text, against the figures its architecture's authors or torchvision publish.
//
// Tolerances. Our graphs fold batch normalisation into the convolutions, one bias per output
// channel where a trained model counts BN's weight and bias: that is 0.1-0.5% of these
// models' parameters, so an exact count (torchvision's num_params) is matched within 1%. Only
// the architectures without batch normalisation match exactly. A figure published rounded
// ("5.4M", "0.31 GFLOPS") is matched within its rounding plus that 0.5%.
//
// Where ncnn's benchmark graph (whose times the catalog publishes, and which the generator
// follows) differs from the paper, the difference is taken out by arithmetic before comparing,
// so that it is a check of the rest.
TEST_CASE("every reference graph costs what its architecture's publications say", "[nn]") {
  std::map<std::string, GraphCost> cost;
  for (const ReferenceGraph& g : reference_graphs()) {
    INFO(g.name);
    cost[g.name] = graph_cost(g);
    CHECK(cost[g.name].output_size == 1000);  // ImageNet's classes
  }
  auto params = [&](const char* name) { return double(cost.at(name).params); };
  auto macs = [&](const char* name) { return double(cost.at(name).macs); };

  // SqueezeNet 1.1: torchvision's squeezenet1_1, num_params 1,235,496 and 0.35 GFLOPS at
  // 224x224. No batch normalisation: exact. Its MACs at 224x224, less ncnn's padded last
  // convolution (512x1000 weights at 15x15 outputs instead of 13x13).
  CHECK(cost.at("squeezenet").params == 1'235'496);
  const auto squeezenet = std::find_if(reference_graphs().begin(), reference_graphs().end(),
                                       [](const auto& g) { return g.name == "squeezenet"; });
  const long long at_224 = graph_cost(with_input(*squeezenet, 224, 224)).macs;
  check_within("squeezenet MACs at 224", double(at_224 - 512'000LL * (15 * 15 - 13 * 13)), 0.35e9,
               0.02);

  // MobileNet v1 1.0: Howard et al. 2017, Table 8: 569M mult-adds, 4.2M parameters.
  check_within("mobilenet params", params("mobilenet"), 4.2e6, 0.02);
  check_within("mobilenet MACs", macs("mobilenet"), 569e6, 0.01);

  // MobileNet v2 1.0: torchvision's mobilenet_v2, num_params 3,504,872; Sandler et al. 2018,
  // Table 4: 300M multiply-adds. Less ncnn's 1x1 convolution in the first block (32 to 32
  // channels with biases, at 112x112).
  check_within("mobilenet_v2 params", params("mobilenet_v2") - (32 * 32 + 32), 3'504'872, 0.01);
  check_within("mobilenet_v2 MACs", macs("mobilenet_v2") - 112 * 112 * 32 * 32, 300e6, 0.01);

  // MobileNet v3 Large 1.0: torchvision's mobilenet_v3_large, num_params 5,483,032; Howard et
  // al. 2019, Table 3: 219M MAdds. ncnn's 160-channel stage has blocks (expansion, output size)
  // 672 at 14x14, 672 at 7x7 (stride 2), 960 at 7x7 where the paper's has 672 at 7x7 (stride
  // 2), 960, 960. Taking the paper's first two out and ncnn's first two in leaves: the first
  // block's 5x5 depthwise and 1x1 out at 14x14 instead of 7x7, a 1x1 in (160 to 672) at 14x14,
  // and a 672 squeeze-and-excitation (E x E/4, twice) in place of a whole 960 block at 7x7.
  {
    const double extra_macs = 672.0 * 14 * 14 * (25 + 160 + 160) + 2 * 672 * 168 -
                              (960.0 * 7 * 7 * (160 + 25 + 160) + 2 * 960 * 240);
    // Parameters (with one bias per output) do not depend on the stride: a 672 block in place
    // of a 960 one.
    const double extra_params = 672.0 * (160 + 1 + 25 + 1 + 160) + (2 * 672 * 168 + 168 + 672) -
                                (960.0 * (160 + 1 + 25 + 1 + 160) + (2 * 960 * 240 + 240 + 960));
    check_within("mobilenet_v3 params", params("mobilenet_v3") - extra_params, 5'483'032, 0.01);
    check_within("mobilenet_v3 MACs", macs("mobilenet_v3") - extra_macs, 219e6, 0.02);
  }

  // ShuffleNet v1 1x, 3 groups: the authors' megvii-model/ShuffleNet-Series, ShuffleNetV1
  // README: 138M FLOPs (multiply-adds), 1.9M parameters. ncnn's first unit of each stage
  // narrows its bottleneck to a quarter of its branch's output: 54, 60, 120 channels where the
  // paper's quarter of the unit's output gives 60, 120, 240. Each such unit: a 1x1 convolution
  // at the input size (ungrouped in the first unit), a 3x3 depthwise and a grouped 1x1 one at
  // half of it.
  {
    auto unit_macs = [](double in, double mid, double branch, double size, double groups) {
      const double half = size / 2;
      return in / groups * mid * size * size + mid * 9 * half * half +
             mid / 3 * branch * half * half;
    };
    auto unit_params = [](double in, double mid, double branch, double groups) {
      return in / groups * mid + mid + mid * 9 + mid + mid / 3 * branch;
    };
    const double extra_macs = unit_macs(24, 60, 216, 56, 1) - unit_macs(24, 54, 216, 56, 1) +
                              unit_macs(240, 120, 240, 28, 3) - unit_macs(240, 60, 240, 28, 3) +
                              unit_macs(480, 240, 480, 14, 3) - unit_macs(480, 120, 480, 14, 3);
    const double extra_params = unit_params(24, 60, 216, 1) - unit_params(24, 54, 216, 1) +
                                unit_params(240, 120, 240, 3) - unit_params(240, 60, 240, 3) +
                                unit_params(480, 240, 480, 3) - unit_params(480, 120, 480, 3);
    check_within("shufflenet params", params("shufflenet") + extra_params, 1.9e6, 0.03);
    check_within("shufflenet MACs", macs("shufflenet") + extra_macs, 138e6, 0.01);
  }

  // ShuffleNet v2 1.0x: torchvision's shufflenet_v2_x1_0, num_params 2,278,604; the authors'
  // megvii-model/ShuffleNet-Series README (Ma et al. 2018): 146M FLOPs (multiply-adds).
  check_within("shufflenet_v2 params", params("shufflenet_v2"), 2'278'604, 0.01);
  check_within("shufflenet_v2 MACs", macs("shufflenet_v2"), 146e6, 0.01);

  // MnasNet 1.0: torchvision's mnasnet1_0, num_params 4,383,312, 0.31 GFLOPS.
  check_within("mnasnet params", params("mnasnet"), 4'383'312, 0.01);
  check_within("mnasnet MACs", macs("mnasnet"), 0.31e9, 0.02);

  // EfficientNet-B0: torchvision's efficientnet_b0, num_params 5,288,548; Tan and Le 2019,
  // Table 2: 0.39B FLOPs (multiply-adds).
  check_within("efficientnet_b0 params", params("efficientnet_b0"), 5'288'548, 0.01);
  check_within("efficientnet_b0 MACs", macs("efficientnet_b0"), 0.39e9, 0.02);

  // RegNetY-400MF: torchvision's regnet_y_400mf, num_params 4,344,144, 0.40 GFLOPS
  // (Radosavovic et al. 2020: 0.4B flops, 4.3M parameters).
  check_within("regnety_400m params", params("regnety_400m"), 4'344'144, 0.01);
  check_within("regnety_400m MACs", macs("regnety_400m"), 0.40e9, 0.02);

  // GoogLeNet: BVLC's Caffe model (no batch normalisation), 6,998,552 parameters (as
  // HewlettPackard/dlcookbook-dlbs, docs/models/models.md, tabulates it): exact. Szegedy et al.
  // 2014, Table 1: 1.5G multiply-adds, whose rows sum to 1502M with 34M for the first
  // convolution, where 112x112x64 outputs of a 7x7x3 kernel take 118M; with that row so, 1586M.
  CHECK(cost.at("googlenet").params == 6'998'552);
  check_within("googlenet MACs", macs("googlenet"), 1502e6 - 34e6 + 112.0 * 112 * 64 * 7 * 7 * 3,
               0.01);

  // ResNet-18: torchvision's resnet18, num_params 11,689,512, 1.81 GFLOPS; less ncnn's
  // projection shortcut in the first block (64 to 64 channels with biases, at 56x56).
  check_within("resnet18 params", params("resnet18") - (64 * 64 + 64), 11'689'512, 0.01);
  check_within("resnet18 MACs", macs("resnet18") - 56 * 56 * 64 * 64, 1.81e9, 0.01);

  // AlexNet as Caffe's bvlc_alexnet, with its grouped convolutions, no batch normalisation:
  // 62,378,344 parameters ungrouped (HewlettPackard/dlcookbook-dlbs, docs/models/models.md)
  // less the halves that 2 groups drop from conv2, conv4 and conv5 (96x256x5x5, 384x384x3x3,
  // 384x256x3x3 halved) = 60,965,224: exact. 724M MACs (Sze et al. 2017, "Efficient Processing
  // of Deep Neural Networks: A Tutorial and Survey", its summary of popular DNNs).
  CHECK(cost.at("alexnet").params ==
        62'378'344 - (96 * 256 * 25 + 384 * 384 * 9 + 384 * 256 * 9) / 2);
  CHECK(cost.at("alexnet").params == 60'965'224);
  check_within("alexnet MACs", macs("alexnet"), 724e6, 0.01);

  // VGG-16: torchvision's vgg16, num_params 138,357,544 (no batch normalisation: exact),
  // 15.47 GFLOPS.
  CHECK(cost.at("vgg16").params == 138'357'544);
  check_within("vgg16 MACs", macs("vgg16"), 15.47e9, 0.005);

  // ResNet-50: torchvision's resnet50, num_params 25,557,032 (the stride's place does not
  // change it); He et al. 2016, Table 1: 3.8 x 10^9 FLOPs (multiply-adds) for this original
  // form, downsampling in the 1x1 convolution.
  check_within("resnet50 params", params("resnet50"), 25'557'032, 0.01);
  check_within("resnet50 MACs", macs("resnet50"), 3.8e9, 0.02);
}

TEST_CASE("a device's nn speed: from its published times, chosen by default, and said",
          "[nn][device]") {
  const std::string file = R"({"edgeprof_device": 1, "name": "board", "cores": 4,
    "reference_speed": 0.4, "memory": "1GiB",
    "nn": {"precision": "fp32", "threads": 1, "ms": {"mobilenet": 100, "resnet18": 300},
           "threads_ms": {"4": {"mobilenet": 60}}}})";
  DeviceLoadOptions known;
  known.host_reference_speed = 1.0;
  known.host_nn_ms = std::map<std::string, double>{{"mobilenet", 10}, {"resnet18", 20}};
  const Device d = parse_device_json(file, "board.json", known);
  REQUIRE(d.nn);
  CHECK(d.core_speed == Approx(0.4));  // the described (integer) speed is kept
  CHECK(d.nn->core_speed == Approx(1 / std::sqrt(10.0 * 15.0)));
  CHECK(d.nn_ms.size() == 2);
  CHECK(d.nn_threads_ms.at(4).at("mobilenet") == 60);
  // Written and read back alike.
  CHECK(parse_device_json(device_to_json(d), "again.json", known) == d);

  // By default the plan emulates the nn speed, and says so.
  const EmulationPlan plan = plan_emulation(d, two_cpu_host());
  CHECK(plan.capacity_cores() == Approx(4 * d.nn->core_speed).epsilon(0.01));
  CHECK(has_note(plan.notes, "speed: nn speed"));
  CHECK(has_note(plan.notes, "2 ncnn graphs"));
  std::vector<std::string> notes;
  const Device nn = for_speed_kind(d, SpeedKind::automatic, &notes);
  CHECK(nn.speed_kind == "nn");
  CHECK(nn.core_speed == d.nn->core_speed);
  CHECK_THAT(describe_core_speed(nn), Contains("nn speed"));
  CHECK(for_speed_kind(nn, SpeedKind::nn) == nn);  // twice changes nothing
  CHECK_THROWS_AS(for_speed_kind(nn, SpeedKind::integer), DeviceError);

  // Asked for the integer speed: the described one.
  PlanOptions integer;
  integer.speed_kind = SpeedKind::integer;
  CHECK(plan_emulation(d, two_cpu_host(), integer).capacity_cores() ==
        Approx(1.6).epsilon(0.01));

  // This host's nn rating not known (nor cached), and not measured on first use: integer
  // speed, with a loud note naming the command.
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  test::ScopedEnv no_measuring("EDGEPROF_MEASURE_NN", "0");
  DeviceLoadOptions unknown = known;
  unknown.host_nn_ms = std::map<std::string, double>{};
  const Device without = parse_device_json(file, "board.json", unknown);
  CHECK_FALSE(without.nn);
  const EmulationPlan fallback = plan_emulation(without, two_cpu_host());
  CHECK(fallback.capacity_cores() == Approx(1.6).epsilon(0.01));
  CHECK(has_note(fallback.notes, "calibrate-host --nn"));
  PlanOptions want_nn;
  want_nn.speed_kind = SpeedKind::nn;
  CHECK_THROWS_WITH(plan_emulation(without, two_cpu_host(), want_nn),
                    Contains("no nn speed") && Contains("--speed-kind integer"));

  CHECK_THROWS_WITH(parse_device_json(R"({"edgeprof_device": 1, "name": "b", "cores": 1,
    "core_speed": 0.5, "memory": "1GiB", "nn": {"ms": {"mobilenet": 3},
    "threads_ms": {"four": {"mobilenet": 1}}}})",
                                      "b.json"),
                    Contains("nn.threads_ms.four") && Contains("thread count"));
  CHECK(speed_kind_from_string("nn") == SpeedKind::nn);
  CHECK_THROWS_WITH(speed_kind_from_string("fast"), Contains("automatic") && Contains("integer"));
  CHECK_THROWS_WITH(parse_device_json(R"({"edgeprof_device": 1, "name": "b", "cores": 1,
    "core_speed": 0.5, "memory": "1GiB", "nn": {"ms": {"mobilenet": -3}}})",
                                      "b.json"),
                    Contains("b.json") && Contains("nn.ms.mobilenet"));
}

TEST_CASE("this host's nn rating is measured, cached, and the catalog follows it",
          "[nn][catalog]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  std::string why;
  CHECK_FALSE(cached_nn_rating(&why));
  CHECK_THAT(why, Contains("not measured yet"));
  const Device before = find_device("raspberry-pi-4b-8gb");
  CHECK_FALSE(before.nn);
  CHECK(before.nn_ms.size() >= 10);
  CHECK(before.nn_precision == "fp32");
  CHECK(before.sources.at("nn").status == "measured");
  CHECK_THAT(before.sources.at("nn").source, Contains("Tencent/ncnn"));
  CHECK(find_device("raspberry-pi-5-8gb").nn_precision == "fp16");
  CHECK(find_device("beaglebone-black").nn_ms.empty());

  const test::FakeTree bin;
  NnOptions options;
  options.python = fake_python(bin, 10.0);
  std::vector<std::string> lines;
  options.progress = [&](const std::string& l) { lines.push_back(l); };
  const NnRating r = measure_nn_rating(options);
  CHECK(r.host_ms.size() == reference_graphs().size());
  CHECK(r.runtime == "ncnn 1.0.test (stand-in)");
  CHECK(r.cache_file == cache.root() + "/host-nn.json");
  CHECK(has_note(lines, "[1/"));
  REQUIRE(cached_nn_rating());
  CHECK(cached_nn_rating()->host_ms == r.host_ms);

  // Every catalog device with published times now has an nn speed: its times over 10 ms.
  const Device pi = find_device("raspberry-pi-4b-8gb");
  REQUIRE(pi.nn);
  CHECK(pi.nn->core_speed == Approx(1 / std::exp([&] {
                                      double s = 0;
                                      for (const auto& [m, ms] : pi.nn_ms) s += std::log(ms / 10);
                                      return s / double(pi.nn_ms.size());
                                    }())));
  const EmulationPlan plan = plan_emulation(for_threads(pi, 1), two_cpu_host());
  CHECK(has_note(plan.notes, "speed: nn speed"));

  // A failing runner: an error with its output, nothing cached over the good rating.
  bin.file("/broken", "#!/bin/sh\necho 'error: the Python package ncnn is not installed'\nexit 3\n");
  std::filesystem::permissions(bin.root() + "/broken", std::filesystem::perms::owner_all);
  options.python = bin.root() + "/broken";
  CHECK_THROWS_WITH(measure_nn_rating(options), Contains("ncnn is missing") &&
                                                    Contains("exit status 3"));
  options.python = bin.root() + "/no-such-python";
  CHECK_THROWS_WITH(measure_nn_rating(options), Contains("pip install ncnn"));
  CHECK(cached_nn_rating()->host_ms == r.host_ms);
}

// A stand-in for the Python that has PyTorch: records its arguments, prints what the PyTorch
// runner prints for the models it was given (one ncnn graph name too, which is not PyTorch's).
TEST_CASE("nn runtimes: ncnn's reference graphs first, then PyTorch's models", "[nn][runtime]") {
  const std::vector<NnRuntime>& all = nn_runtimes();
  REQUIRE(all.size() >= 2);
  CHECK(all[0].id == "ncnn");
  CHECK(all[0].cache_name == "host-nn.json");
  CHECK(all[0].models.size() == reference_graphs().size());
  CHECK(all[0].precision.empty());
  const NnRuntime& torch = nn_runtime("pytorch");
  CHECK(torch.name == "PyTorch");
  CHECK(torch.precision == "fp32");
  CHECK(torch.cache_name == "host-nn-pytorch.json");
  CHECK_THAT(torch.install, Contains("torch") && Contains("timm"));
  CHECK(std::count(torch.models.begin(), torch.models.end(), "mobilenetv2_100") == 1);
  CHECK(std::count(torch.models.begin(), torch.models.end(), "shufflenet_v2_x1_0") == 1);
  // ONNX Runtime: the same models, exported by the same runner.
  const NnRuntime& ort = nn_runtime("onnxruntime");
  CHECK(ort.name == "ONNX Runtime");
  CHECK(ort.models == torch.models);
  CHECK(ort.cache_name == "host-nn-onnxruntime.json");
  CHECK_THAT(ort.install, Contains("onnxruntime"));
  std::set<std::string> ids;
  for (const NnRuntime& r : all) CHECK(ids.insert(r.id).second);  // one entry per runtime
  CHECK_THROWS_WITH(nn_runtime("tflite"), Contains("nn runtime: no runtime is named 'tflite'") &&
                                              Contains("ncnn, pytorch"));
  CHECK_THROWS_WITH(cached_nn_rating(nullptr, "tflite"), Contains("ncnn, pytorch"));
}

TEST_CASE("the runner's output is parsed with the runtime's own model names", "[nn][runtime]") {
  const std::string text =
      "runtime PyTorch 2.1 fp32 eager\nresnet18 12.5 12 13\nmobilenet_v2 3 3 3\nvgg13 90 88 "
      "95\n";
  const NnRating torch = parse_nn_output(text, "runner", "pytorch");
  CHECK(torch.runtime_id == "pytorch");
  CHECK(torch.runtime == "PyTorch 2.1 fp32 eager");
  // ncnn's graph mobilenet_v2 is not a PyTorch model of the rating (timm's is mobilenetv2_100).
  CHECK(torch.host_ms == std::map<std::string, double>{{"resnet18", 12.5}, {"vgg13", 90}});
  const NnRating ncnn = parse_nn_output(text, "runner");
  CHECK(ncnn.runtime_id == "ncnn");
  CHECK(ncnn.host_ms == std::map<std::string, double>{{"resnet18", 12.5}, {"mobilenet_v2", 3}});
  CHECK_THROWS_WITH(parse_nn_output("mobilenet_v2 3 3 3\n", "runner", "pytorch"),
                    Contains("no graph was measured"));
  // What each model's layers write per inference, where the runner reports it.
  const NnRating act = parse_nn_output(text + "activations resnet18 35.9\nactivations x 1\n",
                                       "runner", "pytorch");
  CHECK(act.activation_mb == std::map<std::string, double>{{"resnet18", 35.9}});
  CHECK(torch.activation_mb.empty());
  CHECK_THROWS_WITH(parse_nn_output(text + "activations vgg13 -1\n", "runner", "pytorch"),
                    Contains("activations of vgg13 is '-1', not a positive number of MB"));
}

TEST_CASE("a PyTorch rating is measured with its models and cached apart from ncnn's",
          "[nn][runtime]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  std::string why;
  CHECK_FALSE(cached_nn_rating(&why, "pytorch"));
  CHECK_THAT(why, Contains("not measured yet"));
  NnOptions options;
  options.runtime = "pytorch";
  options.python = test::fake_torch_python(bin, 20.0);
  options.warmup = 2;
  options.loops = 5;
  std::vector<std::string> lines;
  options.progress = [&](const std::string& l) { lines.push_back(l); };
  const NnRating r = measure_nn_rating(options);
  const NnRuntime& torch = nn_runtime("pytorch");
  // The runner was told every model, after DIR WARMUP LOOPS.
  std::ifstream args_file(bin.root() + "/args.txt");
  std::string args((std::istreambuf_iterator<char>(args_file)), {});
  for (const std::string& m : torch.models) CHECK_THAT(args, Contains(" " + m));
  CHECK_THAT(args, Contains(" 2 5 "));
  CHECK(r.runtime_id == "pytorch");
  CHECK(r.precision == "fp32");
  CHECK(r.host_ms.size() == torch.models.size());
  CHECK_FALSE(r.host_ms.count("mobilenet_v2"));
  CHECK(r.cache_file == cache.root() + "/host-nn-pytorch.json");
  CHECK(has_note(lines, "models with PyTorch"));
  CHECK(has_note(lines, "[1/13]"));
  const auto cached = cached_nn_rating(nullptr, "pytorch");
  REQUIRE(cached);
  CHECK(cached->host_ms == r.host_ms);
  CHECK(r.activation_mb.size() == torch.models.size());
  CHECK(cached->activation_mb == r.activation_mb);
  CHECK(cached->runtime_id == "pytorch");
  CHECK(cached->runtime == r.runtime);
  // ncnn's rating is another file, still unmeasured: no catalog device got an nn speed.
  CHECK_FALSE(cached_nn_rating());
  CHECK_FALSE(find_device("raspberry-pi-4b-8gb").nn);

  // One runtime's file is not another's.
  std::filesystem::copy_file(cache.root() + "/host-nn-pytorch.json",
                             cache.root() + "/host-nn.json");
  CHECK_FALSE(cached_nn_rating(&why));
  CHECK_THAT(why, Contains("runtime 'pytorch', not 'ncnn'"));

  // A subset is measured, not cached; a name that is not one of its models is refused.
  options.graphs = {"resnet18"};
  CHECK(measure_nn_rating(options).note == "measured a subset of the models: not cached");
  options.graphs = {"mobilenet_v2"};
  CHECK_THROWS_WITH(measure_nn_rating(options),
                    Contains("no model named 'mobilenet_v2'") && Contains("mobilenetv2_100"));
  options.graphs.clear();
  // Missing: the error says what to install; the good rating stays.
  options.python = bin.root() + "/no-such-python";
  CHECK_THROWS_WITH(measure_nn_rating(options), Contains("pip install torch torchvision timm"));
  CHECK(cached_nn_rating(nullptr, "pytorch")->host_ms == r.host_ms);

  // ONNX Runtime: the same runner told its backend, its own cache file.
  options.runtime = "onnxruntime";
  options.python = test::fake_torch_python(bin, 30.0);
  const NnRating o = measure_nn_rating(options);
  std::ifstream ort_args(bin.root() + "/args.txt");
  CHECK_THAT(std::string((std::istreambuf_iterator<char>(ort_args)), {}),
             Contains(" 2 5 --backend=onnxruntime --rounds=8 --min-time=2 --mean "
                      "--activations=graph efficientnet_b0"));
  CHECK(o.runtime_id == "onnxruntime");
  CHECK(o.cache_file == cache.root() + "/host-nn-onnxruntime.json");
  CHECK(cached_nn_rating(nullptr, "onnxruntime")->host_ms.at("vgg13") == Approx(30));
  // Without activations (a drift probe's way), its graph rule's argument goes too, and such a
  // rating is not cached.
  options.activations = false;
  options.python = test::fake_torch_python(bin, 40.0);
  CHECK(measure_nn_rating(options).note ==
        "measured without activations (NnOptions::activations): not cached");
  std::ifstream bare_args(bin.root() + "/args.txt");
  CHECK_THAT(std::string((std::istreambuf_iterator<char>(bare_args)), {}),
             Contains("--mean efficientnet_b0"));
  CHECK(cached_nn_rating(nullptr, "onnxruntime")->host_ms.at("vgg13") == Approx(30));
  CHECK(cached_nn_rating(nullptr, "pytorch")->host_ms == r.host_ms);
}

TEST_CASE("the PyTorch runner runs in a real interpreter: models timed, or PyTorch missing",
          "[nn][runtime][slow]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  NnOptions options;
  options.runtime = "pytorch";
  options.python = "python3";
  options.graphs = {"mobilenetv3_small_050", "shufflenet_v2_x1_0"};
  options.warmup = 1;
  options.loops = 1;
  if (std::system("command -v python3 > /dev/null 2>&1") != 0) {
    // No Python at all (the cgroup v2 VM has none): the library says what to install.
    CHECK_THROWS_WITH(measure_nn_rating(options), Contains("no Python interpreter 'python3'") &&
                                                      Contains("pip install torch"));
    return;
  }
  if (std::system("python3 -c 'import torch, torchvision, timm' 2>/dev/null") != 0) {
    // The runner's own refusal, through the library: the runtime and the command to install.
    CHECK_THROWS_WITH(measure_nn_rating(options), Contains("PyTorch is missing") &&
                                                      Contains("pip install torch") &&
                                                      Contains("exit status 3"));
    options.runtime = "onnxruntime";
    CHECK_THROWS_WITH(measure_nn_rating(options), Contains("ONNX Runtime is missing") &&
                                                      Contains("onnxruntime") &&
                                                      Contains("exit status 3"));
    return;
  }
  const NnRating r = measure_nn_rating(options);
  CHECK(r.runtime_id == "pytorch");
  CHECK_THAT(r.runtime, Contains("PyTorch"));
  REQUIRE(r.host_ms.size() == 2);
  for (const auto& [model, ms] : r.host_ms) {
    INFO(model << ": " << ms << " ms");
    CHECK(std::isfinite(ms));
    CHECK(ms > 0);
  }
}

TEST_CASE("the catalog carries the boards' published PyTorch times with their source",
          "[nn][runtime][catalog]") {
  for (const char* name : {"raspberry-pi-4b-4gb", "raspberry-pi-4b-8gb", "raspberry-pi-5-8gb"}) {
    INFO(name);
    const Device d = find_device(name);
    REQUIRE(d.runtime_ms.count("pytorch"));
    const RuntimeTimes& t = d.runtime_ms.at("pytorch");
    CHECK(t.precision == "fp32");
    CHECK(t.threads == 4);  // PyTorch's default: all the cores
    CHECK(t.ms.size() == nn_runtime("pytorch").models.size());
    CHECK_THAT(d.sources.at("runtimes").source, Contains("ispcojp/ai_inference_device_benchmark"));
    CHECK(d.sources.at("runtimes").status == "measured");
  }
  const Device orin = find_device("jetson-orin-nano-8gb");
  CHECK(orin.runtime_ms.at("pytorch").threads == 6);
  CHECK(orin.runtime_ms.at("pytorch").ms.at("resnet18") == Approx(95.595));
  // ONNX Runtime's, from the same source: the same models, another runtime's times.
  CHECK(orin.runtime_ms.at("onnxruntime").threads == 6);
  CHECK(orin.runtime_ms.at("onnxruntime").ms.size() == nn_runtime("onnxruntime").models.size());
  CHECK(find_device("raspberry-pi-4b-4gb").runtime_ms.at("onnxruntime").ms.at("efficientnet_b0") ==
        Approx(200.081));
  CHECK(find_device("beaglebone-black").runtime_ms.empty());
}

TEST_CASE("the catalog carries the PyTorch tutorial's Raspberry Pi 4 times as PyTorch int8",
          "[nn][runtime][catalog]") {
  // The tutorial's board: a Pi 4 of 4 GB at 1.5 GHz, its table's eleven rows, all four cores.
  const Device pi = find_device("raspberry-pi-4b-4gb");
  REQUIRE(pi.runtime_ms.count("pytorch-int8"));
  const RuntimeTimes& t = pi.runtime_ms.at("pytorch-int8");
  CHECK(t.precision == "int8");
  CHECK(t.threads == 4);
  CHECK(t.ms.size() == nn_runtime("pytorch-int8").models.size());
  CHECK(t.ms.at("mobilenet_v2") == Approx(26.4));
  CHECK(t.ms.at("resnext101_32x8d") == Approx(885.3));
  CHECK_THAT(pi.sources.at("runtimes").source, Contains("realtime_rpi"));
  // The 8 GB board runs at 1.8 GHz: the same times scaled by its clock (estimated).
  const Device pi8 = find_device("raspberry-pi-4b-8gb");
  CHECK(pi8.runtime_ms.at("pytorch-int8").ms.at("mobilenet_v2") == Approx(26.4 * 1500 / 1800));
  CHECK_THAT(pi8.sources.at("runtimes").source, Contains("scaled by 1500/1800"));
  // Only the Pi 4 has int8 times: a board without them is refused by name, not given fp32's.
  CHECK(find_device("raspberry-pi-5-8gb").runtime_ms.count("pytorch-int8") == 0);
  CHECK(find_device("raspberry-pi-5-8gb").runtime_ms.count("pytorch") == 1);
}

TEST_CASE("on every catalog board a runtime's one-core factor is its projection's speed-up",
          "[nn][runtime][interval]") {
  // What device_interval() leaves the projection's spread out on: a runtime's table at the
  // board's own cores, made one core's by the same speed-up that projects a run back.
  int boards = 0;
  for (const Device& d : catalog_devices()) {
    for (const auto& [id, times] : d.runtime_ms) {
      NnRating host;
      host.runtime_id = id;
      host.precision = times.precision;
      for (const auto& [model, ms] : times.ms) host.host_ms[model] = ms / 10;
      const NnSpeed s = runtime_speed(d, id, host);
      if (s.threads != d.cores) continue;
      ++boards;
      const ThreadsProjection p = project_threads(d);
      CHECK(p.threads == s.threads);
      CHECK(p.speedup == Approx(s.one_core_factor).epsilon(1e-12));
    }
  }
  CHECK(boards >= 3);
}

TEST_CASE("a runtime's speed: published times made one core's by the board's speed-up",
          "[nn][runtime]") {
  Device d = make_device("board", 4, 0.5, "1GiB");
  // ncnn: one thread 100 ms, four threads 40 (a speed-up of 2.5) on three graphs.
  d.nn_ms = {{"mobilenet", 100}, {"resnet18", 100}, {"squeezenet", 100}};
  d.nn_threads_ms[4] = {{"mobilenet", 40}, {"resnet18", 40}, {"squeezenet", 40}};
  d.runtime_ms["pytorch"] = RuntimeTimes{"fp32", 4, {{"resnet18", 200}, {"vgg13", 800}}};
  NnRating host;
  host.runtime_id = "pytorch";
  host.host_ms = {{"resnet18", 50}, {"vgg13", 100}, {"mixnet_s", 10}};
  const NnSpeed s = runtime_speed(d, "pytorch", host);
  CHECK(s.basis == "pytorch");
  CHECK(s.threads == 4);
  CHECK(s.one_core_factor == Approx(2.5));
  // One core: 500 and 2000 ms against 50 and 100: ratios 10 and 20.
  CHECK(s.ratios.at("resnet18") == Approx(10));
  CHECK(s.ratios.at("vgg13") == Approx(20));
  CHECK(s.core_speed == Approx(1 / std::sqrt(200.0)));
  CHECK(s.loo_median_error == Approx(0.75));  // each predicts the other 2x off: 100%, 50%
  CHECK_THAT(describe(s), Contains("PyTorch speed") && Contains("4-thread times x 2.5") &&
                              Contains("leave-one-model-out"));
  // A device narrowed to one core keeps the board's speed-up.
  CHECK(runtime_speed(for_threads(d, 1), "pytorch", host).one_core_factor == Approx(2.5));

  // Refused, each with what is missing.
  NnRating ncnn_host = host;
  ncnn_host.runtime_id = "ncnn";
  CHECK_THROWS_WITH(runtime_speed(d, "pytorch", ncnn_host), Contains("measured with 'ncnn'"));
  CHECK_THROWS_WITH(runtime_speed(d, "ncnn", host), Contains("other than ncnn"));
  CHECK_THROWS_WITH(runtime_speed(d, "tflite", host), Contains("no runtime is named 'tflite'"));
  Device bare = d;
  bare.nn_threads_ms.clear();
  CHECK_THROWS_AS(runtime_speed(bare, "pytorch", host), DeviceError);
  CHECK_THROWS_WITH(runtime_speed(bare, "pytorch", host),
                    Contains("ran on 4 threads") && Contains("threads 1"));
  bare.runtime_ms["pytorch"].threads = 1;  // one thread's times need no speed-up
  CHECK(runtime_speed(bare, "pytorch", host).one_core_factor == 1);
  bare.runtime_ms["pytorch"].precision = "int8";  // against an fp32 rating: not one speed
  CHECK_THROWS_WITH(runtime_speed(bare, "pytorch", host), Contains("are int8") &&
                                                              Contains("rating is fp32"));
  bare.runtime_ms.clear();
  CHECK_THROWS_WITH(runtime_speed(bare, "pytorch", host), Contains("no published PyTorch times"));
  host.host_ms = {{"mixnet_s", 10}};
  CHECK_THROWS_WITH(runtime_speed(d, "pytorch", host), Contains("no model has both"));
}

TEST_CASE("a workload's own runtime speed by a memory term", "[nn][runtime][memory-fit]") {
  Device d = make_device("board", 1, 0.5, "1GiB");
  NnRating host;
  host.runtime_id = "pytorch";
  host.host_ms = {{"resnet18", 50}, {"vgg13", 500}, {"mixnet_s", 20}, {"mnasnet_a1", 16},
                  {"mobilenetv2_100", 18}};
  host.activation_mb = {{"resnet18", 36}, {"vgg13", 104}, {"mixnet_s", 88},
                        {"mnasnet_a1", 90}, {"mobilenetv2_100", 99}};
  // One thread's times, exactly 2 x the host's + 3 ms per MB.
  RuntimeTimes t{"fp32", 1, {}};
  for (const auto& [m, h] : host.host_ms) t.ms[m] = 2 * h + 3 * host.activation_mb.at(m);
  d.runtime_ms["pytorch"] = t;
  const NnSpeed one = runtime_speed(d, "pytorch", host);
  CHECK(one.memory_mb_per_ms == 0);
  CHECK(one.loo_median_error > 0.2);  // one speed misses the depthwise ones
  // A workload writing 2 MB per host ms: 2 + 3 x 2 = 8 device ms per host ms.
  const NnSpeed own = runtime_speed(d, "pytorch", host, 2.0);
  CHECK(own.core_speed == Approx(1.0 / 8));
  CHECK(own.per_host_ms == Approx(2));
  CHECK(own.ms_per_mb == Approx(3));
  CHECK(own.memory_mb_per_ms == 2.0);
  CHECK(own.loo_median_error == Approx(0).margin(1e-9));
  CHECK_THAT(describe(own), Contains("writing 2 MB of activations per ms") &&
                                Contains("2 x its host time + 3 ms per MB"));
  // Refused: a figure that is not one, a rating from before activations were counted, too few
  // models, ncnn.
  CHECK_THROWS_WITH(runtime_speed(d, "pytorch", host, -1), Contains("positive number"));
  CHECK_THROWS_WITH(runtime_speed(d, "pytorch", host, NAN), Contains("positive number"));
  NnRating old = host;
  old.activation_mb.clear();
  CHECK_THROWS_AS(runtime_speed(d, "pytorch", old, 2.0), DeviceError);
  CHECK_THROWS_WITH(runtime_speed(d, "pytorch", old, 2.0),
                    Contains("has none") && Contains("--runtime pytorch --remeasure"));
  NnRating few = host;
  few.activation_mb = {{"resnet18", 36}, {"vgg13", 104}};
  CHECK_THROWS_WITH(runtime_speed(d, "pytorch", few, 2.0),
                    Contains("board with a memory term") && Contains("at least 4"));
  CHECK_THROWS_WITH(for_runtime(d, "ncnn", nullptr, 2.0), Contains("give 0"));
  // A model without activations is in one speed's, not in the fit's: the interval counts the
  // fit's models (4 here: t with 2 degrees of freedom, not 3).
  NnRating part = host;
  part.activation_mb.erase("mobilenetv2_100");
  const NnSpeed partly = runtime_speed(d, "pytorch", part, 2.0);
  CHECK(partly.ratios.size() == 4);
  CHECK(partly.ratios.count("mobilenetv2_100") == 0);
  REQUIRE(time_interval(partly));
  CHECK(time_interval(partly)->models == 4);
  CHECK(runtime_speed(d, "pytorch", part).ratios.size() == 5);
}

TEST_CASE("a catalog device at its PyTorch speed: this host's rating, the note, the plan",
          "[nn][runtime]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const Device pi = find_device("raspberry-pi-4b-4gb");
  CHECK_THROWS_WITH(for_runtime(pi, "pytorch"),
                    Contains("calibrate-host --nn --runtime pytorch") &&
                        Contains("pip install torch torchvision timm"));
  CHECK_THROWS_WITH(for_runtime(find_device("beaglebone-black"), "pytorch"),
                    Contains("no published PyTorch times") && Contains("raspberry-pi-4b-4gb") &&
                        Contains("jetson-orin-nano-8gb"));

  const test::FakeTree bin;
  NnOptions options;
  options.runtime = "pytorch";
  options.python = test::fake_torch_python(bin, 20.0);
  measure_nn_rating(options);
  std::vector<std::string> notes;
  const Device at = for_runtime(pi, "pytorch", &notes);
  REQUIRE(at.nn);
  CHECK(at.nn->basis == "pytorch");
  CHECK(at.speed_kind == "nn");
  CHECK(at.core_speed == at.nn->core_speed);
  CHECK(at.nn->one_core_factor == Approx(core_scaling(pi)->speedup));
  CHECK(at.sources.at("core_speed").status == "estimated");
  CHECK_THAT(at.sources.at("core_speed").source, Contains("PyTorch speed"));
  CHECK(has_note(notes, "speed: PyTorch speed"));
  CHECK_THAT(describe_core_speed(at), Contains("PyTorch speed: 13 models"));
  CHECK(for_runtime(at, "pytorch") == at);  // applying it twice changes nothing
  CHECK_THROWS_WITH(for_runtime(at, "ncnn"), Contains("already set"));
  CHECK_THROWS_WITH(for_speed_kind(at, SpeedKind::integer), Contains("already set"));
  // The plan keeps it: the quota is of that speed, its note says which.
  const EmulationPlan plan = plan_emulation(for_threads(at, 1), two_cpu_host());
  CHECK(has_note(plan.notes, "speed: PyTorch speed"));
  // A report keeps which runtime's speed ran, not ncnn's from this host's rating now.
  Result r;
  r.device = at;
  const Device back = result_from_json(to_json(r)).device;
  REQUIRE(back.nn);
  CHECK(back.nn->basis == "pytorch");
  CHECK(back.core_speed == at.core_speed);
  CHECK(back.nn->one_core_factor == Approx(at.nn->one_core_factor));
  CHECK_THAT(describe_core_speed(back), Contains("PyTorch speed"));
  // A workload's own speed by a memory term (the stand-in's models write 12.5 MB each): another
  // speed, said as such, kept by a report.
  const Device own = for_runtime(pi, "pytorch", nullptr, 0.5);
  REQUIRE(own.nn);
  CHECK(own.nn->memory_mb_per_ms == 0.5);
  CHECK(own.core_speed == Approx(1 / (own.nn->per_host_ms + 0.5 * own.nn->ms_per_mb)));
  CHECK_THAT(own.sources.at("core_speed").source, Contains("activation MB"));
  // At the PyTorch speed already: another memory term (0: one speed) from its published times,
  // as a run that counts its workload's activations does; another runtime's is refused.
  CHECK(for_runtime(own, "pytorch").core_speed == Approx(at.core_speed));
  CHECK(for_runtime(own, "pytorch").nn->memory_mb_per_ms == 0);
  CHECK_THROWS_WITH(for_runtime(own, "onnxruntime"), Contains("already set to its PyTorch speed"));
  r.device = own;
  const Device own_back = result_from_json(to_json(r)).device;
  REQUIRE(own_back.nn);
  CHECK(own_back.nn->memory_mb_per_ms == 0.5);
  CHECK(own_back.nn->ms_per_mb == Approx(own.nn->ms_per_mb));
  // The Pi 5, whose ncnn speed (fp16) is faster than a host core here, runs at its PyTorch one.
  const Device pi5 = for_runtime(find_device("raspberry-pi-5-8gb"), "pytorch");
  CHECK(pi5.core_speed < 1);
  CHECK_NOTHROW(plan_emulation(pi5, two_cpu_host()));
}

TEST_CASE("device files give other runtimes' times: read, checked, written back",
          "[nn][runtime][device-file]") {
  const test::FakeTree dir;
  const std::string good = R"({"edgeprof_device": 1, "name": "mine", "cores": 2,
    "core_speed": 0.3, "memory": "1GiB",
    "runtimes": {"pytorch": {"precision": "fp32", "threads": 1,
                             "ms": {"resnet18": 300, "vgg13": 2000}}},
    "sources": {"runtimes": {"status": "measured", "source": "my board"}}})";
  dir.file("/mine.json", good);
  const Device d = load_device_file(dir.root() + "/mine.json");
  REQUIRE(d.runtime_ms.count("pytorch"));
  CHECK(d.runtime_ms.at("pytorch") == RuntimeTimes{"fp32", 1, {{"resnet18", 300}, {"vgg13", 2000}}});
  dir.file("/again.json", device_to_json(d));
  CHECK(load_device_file(dir.root() + "/again.json").runtime_ms == d.runtime_ms);

  auto refused = [&](const std::string& text) {
    dir.file("/bad.json", text);
    try {
      load_device_file(dir.root() + "/bad.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(loaded)");
  };
  const std::string head = R"({"edgeprof_device": 1, "name": "b", "cores": 1, "core_speed": 0.3,
    "memory": "1GiB", "runtimes": )";
  CHECK_THAT(refused(head + R"({"tflite": {"threads": 1, "ms": {"x": 1}}}})"),
             Contains("runtimes.tflite") && Contains("unknown field"));
  CHECK_THAT(refused(head + R"({"pytorch": {"threads": 1, "ms": {"resnet_18": 1}}}})"),
             Contains("runtimes.pytorch.ms.resnet_18") && Contains("resnet18"));
  CHECK_THAT(refused(head + R"({"pytorch": {"ms": {"resnet18": 1}}}})"),
             Contains("runtimes.pytorch.threads") && Contains("required"));
  CHECK_THAT(refused(head + R"({"pytorch": {"threads": 4}}})"),
             Contains("runtimes.pytorch.ms") && Contains("required"));
  CHECK_THAT(refused(head + R"({"ncnn": {"threads": 1, "ms": {"mobilenet": 1}}}})"),
             Contains("runtimes.ncnn") && Contains("go in `nn`"));
  CHECK_THAT(refused(head + R"({"pytorch": {"threads": 1, "precision": "bf16", "ms": {"resnet18": 1}}}})"),
             Contains("bf16"));
  CHECK_THAT(refused(head + R"({"pytorch": {"threads": 1, "ms": {"resnet18": -1}}}})"),
             Contains("runtimes.pytorch.ms.resnet18"));
  // PyTorch's int8 times go in runtimes.pytorch-int8, whose precision is int8 when unsaid (it
  // read as fp32 before, and every speed from it was refused as another precision).
  CHECK_THAT(refused(head + R"({"pytorch": {"threads": 4, "precision": "int8", "ms": {"resnet18": 1}}}})"),
             Contains("runtimes.pytorch.precision") && Contains("go in runtimes.pytorch-int8") &&
                 Contains("--runtime pytorch-int8"));
  dir.file("/int8.json", head + R"({"pytorch-int8": {"threads": 4, "ms": {"resnet18": 90}}}})");
  const Device int8 = load_device_file(dir.root() + "/int8.json");
  CHECK(int8.runtime_ms.at("pytorch-int8") == RuntimeTimes{"int8", 4, {{"resnet18", 90}}});
  CHECK_THAT(refused(head + R"({"pytorch-int8": {"threads": 4, "ms": {"vgg13": 1}}}})"),
             Contains("runtimes.pytorch-int8.ms.vgg13"));
  // ... and holds int8 times only: fp32 ones there were loaded before and refused only when a
  // speed was taken from them.
  const std::string fp32_in_int8 =
      R"({"pytorch-int8": {"threads": 4, "precision": "fp32", "ms": {"resnet18": 1}}}})";
  CHECK_THAT(refused(head + fp32_in_int8),
             Contains("runtimes.pytorch-int8.precision") && Contains("int8 times only") &&
                 Contains("other times go in runtimes.pytorch") &&
                 !Contains("go in runtimes.pytorch-int8"));
}

TEST_CASE("this host's real nn rating, with ncnn (short form)", "[nn][slow]") {
  if (std::system("python3 -c 'import ncnn' 2>/dev/null") != 0) {
    WARN("python3 has no ncnn: the real nn rating is not run (pip install ncnn)");
    return;
  }
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  NnOptions options;
  options.warmup = 1;  // without, the first inference of the first graph took 215 ms here
  options.loops = 1;
  const NnRating r = measure_nn_rating(options);
  CHECK(r.host_ms.size() == reference_graphs().size());
  CHECK_THAT(r.runtime, Contains("ncnn"));
  // Every graph timed: a finite, positive time. (How long, and how the graphs compare, is this
  // host's speed and load: benchmarks/bench_nn.cpp measures it.)
  for (const auto& [graph, ms] : r.host_ms) {
    INFO(graph << ": " << ms << " ms");
    CHECK(std::isfinite(ms));
    CHECK(ms > 0);
  }
  if (r.cache_file.empty()) {
    // Another busy process shared its CPU: its CPU times, uncached, and said (test_drift.cpp).
    CHECK_THAT(r.note, Contains("was shared"));
    WARN(r.note);
    return;
  }
  REQUIRE(cached_nn_rating());
  const Device pi = find_device("raspberry-pi-4b-8gb");
  REQUIRE(pi.nn);
  WARN(describe(r) << "\n" << pi.name << ": " << describe(*pi.nn));
}

TEST_CASE("a catalog run emulates the nn speed by default and reports it", "[nn][kernel]") {
  REQUIRE_CGROUPS();
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  NnOptions options;
  options.python = fake_python(bin, 10.0);
  measure_nn_rating(options);
  // The Pi Zero 2 W: its 512 MiB fit the cgroup v2 VM too.
  const Device pi = for_threads(find_device("raspberry-pi-zero-2w"), 1);
  REQUIRE(pi.nn);
  const Result r = run(workload({"exit"}), pi);
  REQUIRE(r.ok());
  CHECK(r.device.speed_kind == "nn");
  CHECK(r.device.core_speed == Approx(pi.nn->core_speed));
  CHECK(has_note(r.plan.notes, "speed: nn speed"));
  CHECK_THAT(to_text(r), Contains("nn speed"));
  CHECK_THAT(to_json(r), Contains("\"speed_kind\":\"nn\""));
}

TEST_CASE("a catalog device's first plan measures this host's nn rating, once", "[nn][catalog]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  const Device pi = for_threads(find_device("raspberry-pi-4b-8gb"), 1);
  REQUIRE_FALSE(pi.nn);  // published times, no host rating yet
  PlanOptions o;
  o.measure_nn = true;
  o.nn_measure.python = fake_python(bin, 10.0);
  std::vector<std::string> lines;
  o.nn_measure.progress = [&](const std::string& l) { lines.push_back(l); };
  const EmulationPlan plan = plan_emulation(pi, two_cpu_host(), o);
  CHECK(has_note(plan.notes, "speed: nn speed"));
  REQUIRE_FALSE(lines.empty());
  CHECK_THAT(lines.front(), Contains("raspberry-pi-4b-8gb") && Contains("not measured yet") &&
                                Contains("up to a minute or two"));
  CHECK(has_note(lines, "[1/"));
  REQUIRE(cached_nn_rating());
  // Once: the next plan uses the cache and runs nothing (this interpreter does not exist).
  lines.clear();
  o.nn_measure.python = bin.root() + "/no-such-python";
  CHECK(has_note(plan_emulation(pi, two_cpu_host(), o).notes, "speed: nn speed"));
  CHECK(lines.empty());
}

TEST_CASE("ncnn's interpreter where none is named: the one set for the process, not another "
          "runtime's", "[nn][catalog]") {
  // A first plan measuring the rating took python3 from PATH, though the Python package set
  // only its own measure_* calls to the interpreter that has ncnn: a venv's edgeprof run
  // without activating the venv failed with "pip install ncnn".
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  test::ScopedEnv named("EDGEPROF_PYTHON", "");  // empty: not set
  const test::FakeTree bin;
  test::ScopedEnv path("PATH", bin.root());  // no python3 here
  struct Restore {
    std::string was = default_ncnn_python();
    ~Restore() { set_default_ncnn_python(was); }
  } restore;
  const std::string fake = fake_python(bin, 10.0);
  set_default_ncnn_python(fake);
  CHECK(default_ncnn_python() == fake);
  const Device pi = for_threads(find_device("raspberry-pi-4b-8gb"), 1);
  PlanOptions o;
  o.measure_nn = true;
  CHECK(has_note(plan_emulation(pi, two_cpu_host(), o).notes, "speed: nn speed"));
  REQUIRE(cached_nn_rating());
  CHECK(cached_nn_rating()->command == fake);
  // Another runtime's is not ncnn's: python3 on PATH (none here), named in the error.
  NnOptions torch;
  torch.runtime = "pytorch";
  CHECK_THROWS_WITH(measure_nn_rating(torch), Contains("no Python interpreter 'python3'"));
  // $EDGEPROF_PYTHON still comes first.
  test::ScopedEnv given("EDGEPROF_PYTHON", bin.root() + "/named-python");
  NnOptions ncnn;
  CHECK_THROWS_WITH(measure_nn_rating(ncnn), Contains("named-python"));
  // Unset, python3 on PATH again.
  set_default_ncnn_python("");
  CHECK(default_ncnn_python().empty());
}

TEST_CASE("a rating that cannot be cached is measured once per process, and said so",
          "[nn][catalog]") {
  // With no writable cache directory every plan measured this host's nn rating again (a
  // minute each, an HPO trial each), having said it was "cached for later runs".
  const test::FakeTree cache;
  cache.file("/blocker", "x");  // a file where a directory should be: ENOTDIR, even for root
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root() + "/blocker/edgeprof");
  const test::FakeTree bin;
  const Device pi = for_threads(find_device("raspberry-pi-4b-8gb"), 1);
  PlanOptions o;
  o.measure_nn = true;
  o.nn_measure.python = fake_python(bin, 10.0);
  std::vector<std::string> lines;
  o.nn_measure.progress = [&](const std::string& l) { lines.push_back(l); };
  CHECK(has_note(plan_emulation(pi, two_cpu_host(), o).notes, "speed: nn speed"));
  CHECK_FALSE(cached_nn_rating());
  CHECK(has_note(lines, "this host's nn rating was not cached: cannot create the directory"));
  CHECK(has_note(lines, "this process keeps it for its later runs"));
  // The next plan runs nothing (this interpreter does not exist) and has the same speed.
  lines.clear();
  o.nn_measure.python = bin.root() + "/no-such-python";
  CHECK(has_note(plan_emulation(pi, two_cpu_host(), o).notes, "speed: nn speed"));
  CHECK(lines.empty());
}

TEST_CASE("without ncnn a catalog device's first plan fails and says what to do", "[nn][catalog]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  const Device pi = for_threads(find_device("raspberry-pi-4b-8gb"), 1);
  PlanOptions o;
  o.measure_nn = true;
  o.nn_measure.python = bin.root() + "/no-such-python";
  CHECK_THROWS_WITH(plan_emulation(pi, two_cpu_host(), o),
                    Contains("raspberry-pi-4b-8gb") && Contains("pip install ncnn") &&
                        Contains("--speed-kind integer"));
  CHECK_FALSE(cached_nn_rating());
  // The integer speed needs no rating: nothing is measured.
  PlanOptions integer = o;
  integer.speed_kind = SpeedKind::integer;
  CHECK_NOTHROW(plan_emulation(pi, two_cpu_host(), integer));
  // Measuring turned off: the integer speed, with a note that says how to fix it.
  PlanOptions off = o;
  off.measure_nn = false;
  CHECK(has_note(plan_emulation(pi, two_cpu_host(), off).notes, "calibrate-host --nn"));
  // A device without published times has nothing to measure for.
  CHECK_NOTHROW(plan_emulation(find_device("beaglebone-black"), two_cpu_host(), o));
  CHECK_FALSE(cached_nn_rating());
}

TEST_CASE("EDGEPROF_MEASURE_NN=0 turns measuring on first use off by default", "[nn]") {
  {
    test::ScopedEnv env("EDGEPROF_MEASURE_NN", "0");
    CHECK_FALSE(PlanOptions{}.measure_nn);
  }
  {
    test::ScopedEnv env("EDGEPROF_MEASURE_NN", "1");
    CHECK(PlanOptions{}.measure_nn);
  }
}

TEST_CASE("a catalog run on an unmeasured host measures it and runs at the nn speed",
          "[nn][kernel]") {
  REQUIRE_CGROUPS();
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  const Device pi = for_threads(find_device("raspberry-pi-zero-2w"), 1);
  REQUIRE_FALSE(pi.nn);
  RunOptions o;
  o.slice.plan.measure_nn = true;
  o.slice.plan.nn_measure.python = fake_python(bin, 10.0);
  const Result r = run(workload({"exit"}), pi, o);
  REQUIRE(r.ok());
  // The device run is the measured one, not the integer fallback.
  CHECK(r.device.speed_kind == "nn");
  CHECK(has_note(r.plan.notes, "speed: nn speed"));
  CHECK(cached_nn_rating());
}

TEST_CASE("the precision ncnn computes in, from /proc/cpuinfo", "[nn][parse]") {
  CHECK(host_nn_precision(test::fixture("cpuinfo/x86_64-amd-epyc")) == "fp32");
  CHECK(host_nn_precision(test::fixture("cpuinfo/aarch64-raspberry-pi-4")) == "fp32");
  CHECK(host_nn_precision(test::fixture("cpuinfo/aarch64-jetson-nano")) == "fp32");
  CHECK(host_nn_precision(test::fixture("cpuinfo/armv7-raspberry-pi-3")) == "fp32");
  // ARMv8.2 half-precision arithmetic (a Cortex-A77): fp16, as benchncnn ran there.
  CHECK(host_nn_precision(test::fixture("cpuinfo/aarch64-snapdragon-865")) == "fp16");
  CHECK(host_nn_precision("") == "fp32");
  CHECK(host_nn_precision("Features\t: fp asimdhpx\n") == "fp32");  // a word, not a prefix
}

TEST_CASE("a cached nn rating is this host's and these graphs', or measured again",
          "[nn][catalog]") {
  const test::FakeTree cache;
  test::ScopedEnv env("EDGEPROF_CACHE_DIR", cache.root());
  const test::FakeTree bin;
  NnOptions options;
  options.python = fake_python(bin, 10.0);
  const NnRating r = measure_nn_rating(options);
  CHECK(r.precision == "fp32");  // x86 here; fp16 only on ARMv8.2 cores
  REQUIRE(cached_nn_rating());
  // Round trip: what was measured is what is read.
  CHECK(cached_nn_rating()->host_ms == r.host_ms);
  CHECK(cached_nn_rating()->precision == r.precision);
  CHECK(cached_nn_rating()->runtime == r.runtime);
  const std::string good = test::FakeTree::slurp(r.cache_file);
  auto rewritten = [&](const std::string& key, const std::string& value) {
    auto j = nlohmann::json::parse(good);
    j[key] = value;
    std::ofstream(r.cache_file) << j.dump();
    std::string why;
    const bool usable = cached_nn_rating(&why).has_value();
    std::ofstream(r.cache_file) << good;
    return usable ? std::string("usable") : why;
  };
  // Another CPU, another kernel: this host changed, and the rating is not its.
  CHECK_THAT(rewritten("cpu_model", "Another CPU"), Contains("was measured on") &&
                                                        Contains("measure it again"));
  CHECK_THAT(rewritten("kernel", "1.0.0"), Contains("was measured on"));
  // The graphs changed since (a fixed architecture): their old times do not count.
  CHECK_THAT(rewritten("graphs", "fnv1a64:0000000000000000"),
             Contains("reference graphs that have changed") && Contains("measure it again"));
  CHECK(rewritten("measured_at", "2026-01-01T00:00:00Z") == "usable");
  REQUIRE(cached_nn_rating());
}

TEST_CASE("a device's nn times have one precision: int8 times beside fp32 ones are refused",
          "[nn][device]") {
  CHECK_THROWS_WITH(parse_device_json(R"({"edgeprof_device": 1, "name": "b", "cores": 1,
    "core_speed": 0.5, "memory": "1GiB", "nn": {"precision": "fp32",
    "ms": {"mobilenet": 100, "mobilenet_int8": 60}}})",
                                      "b.json"),
                    Contains("b.json") && Contains("nn.ms.mobilenet_int8") &&
                        Contains("one precision") && Contains("fp32"));
  CHECK_THROWS_WITH(parse_device_json(R"({"edgeprof_device": 1, "name": "b", "cores": 4,
    "core_speed": 0.5, "memory": "1GiB", "nn": {"precision": "fp16", "ms": {"mobilenet": 100},
    "threads_ms": {"4": {"squeezenet_int8": 20}}}})",
                                      "b.json"),
                    Contains("nn.threads_ms.4.squeezenet_int8") && Contains("fp16"));
  CHECK_THROWS_WITH(parse_device_json(R"({"edgeprof_device": 1, "name": "b", "cores": 1,
    "core_speed": 0.5, "memory": "1GiB", "nn": {"precision": "int8", "ms": {"mobilenet": 1}}})",
                                      "b.json"),
                    Contains("nn.precision") && Contains("not fp32 or fp16"));
  // A device missing some graphs: the speed is over the graphs both sides have.
  const NnSpeed s = nn_speed({{"mobilenet", 100}}, {{"mobilenet", 10}, {"resnet18", 20}});
  CHECK(s.ratios.size() == 1);
  CHECK(s.core_speed == Approx(0.1));
}

TEST_CASE("a memory term: a device time as a multiple of the host's plus a cost per MB",
          "[nn][memory-fit]") {
  // Six models whose device times are exactly 2 x the host's + 3 ms per MB: both terms found,
  // and each model held out is predicted exactly from the others.
  const std::map<std::string, double> host{{"a", 10}, {"b", 20}, {"c", 5}, {"d", 40},
                                           {"e", 8}, {"f", 60}};
  const std::map<std::string, double> mb{{"a", 50}, {"b", 10}, {"c", 30}, {"d", 20},
                                         {"e", 90}, {"f", 15}};
  std::map<std::string, double> device;
  for (const auto& [m, h] : host) device[m] = 2 * h + 3 * mb.at(m);
  device["only-device"] = 1;  // in one map only: left out
  const NnMemoryFit f = nn_memory_fit(device, host, mb);
  CHECK(f.per_host_ms == Approx(2));
  CHECK(f.ms_per_mb == Approx(3));
  CHECK(f.held_out_ms.size() == 6);
  CHECK(f.held_out_ms.at("d") == Approx(device.at("d")));
  CHECK(f.loo_median_error == Approx(0).margin(1e-9));
  CHECK(f.loo_worst_error == Approx(0).margin(1e-9));
  CHECK(nn_memory_predict(f, 100, 10) == Approx(230));
  CHECK(nn_memory_predict(f, 100, 0) == Approx(200));
  // A negative or NaN input gave a negative or NaN time.
  for (const auto& [one_host_ms, one_mb] :
       {std::pair{-1.0, 10.0}, {0.0, 10.0}, {std::nan(""), 10.0}, {100.0, -1.0},
        {100.0, std::nan("")}, {100.0, HUGE_VAL}}) {
    CAPTURE(one_host_ms, one_mb);
    CHECK_THROWS_WITH(nn_memory_predict(f, one_host_ms, one_mb),
                      Catch::Contains("nn_memory_predict: the"));
  }

  // Times that one speed explains, activations that would pull the cost per MB below 0: the
  // term stays at 0 and the multiple is one speed's (least squares on relative errors).
  std::map<std::string, double> plain;
  for (const auto& [m, h] : host) {
    plain[m] = 4 * h * (m == "c" ? 1.1 : 1.0) / (1 + mb.at(m) / 1e3);
  }
  const NnMemoryFit p = nn_memory_fit(plain, host, mb);
  CHECK(p.ms_per_mb == 0);
  double x1 = 0, xx = 0;  // the one-term fit: a = sum(h/d) / sum((h/d)^2)
  for (const auto& [m, h] : host) {
    const double x = h / plain.at(m);
    x1 += x, xx += x * x;
  }
  CHECK(p.per_host_ms == Approx(x1 / xx));
  CHECK(p.loo_median_error < 0.2);
  CHECK(p.loo_log_sd > 0);

  // The fit's interval: time_interval()'s arithmetic on its held-out spread and models, with a
  // degree of freedom fewer than an nn speed's (two parameters): an nn speed's with the same
  // spread over one model fewer has the same t and a slightly narrower band.
  NnSpeed fewer;
  for (const auto& [m, h] : host) {
    if (m != "f") fewer.ratios[m] = 1;
  }
  fewer.loo_log_sd = p.loo_log_sd;
  const auto by_fit = time_interval(p);
  const auto by_speed = time_interval(fewer);
  REQUIRE(by_fit);
  REQUIRE(by_speed);
  CHECK(by_fit->models == 6);
  const double n = 6, m = 5;  // sqrt(s^2 (1 + 1/n)) with s = sd (n - 1) / n, the same t
  const double ratio = std::sqrt((n - 1) / n * (n - 1) / n * (1 + 1 / n)) /
                       std::sqrt((m - 1) / m * (m - 1) / m * (1 + 1 / m));
  CHECK(std::log(by_fit->high) == Approx(std::log(by_speed->high) * ratio));
  CHECK(by_fit->low < 1);
  const auto exact = time_interval(f);
  REQUIRE(exact);
  CHECK(exact->low == Approx(1));
  CHECK(exact->high == Approx(1));
  NnMemoryFit one_dof;  // three models, two parameters: one degree of freedom, no interval
  one_dof.held_out_ms = {{"a", 1}, {"b", 2}, {"c", 3}};
  CHECK_FALSE(time_interval(one_dof));
  CHECK_THROWS_WITH(time_interval(p, 1.5), Contains("between 0 and 1"));

  // Too few models, or a time that is not one: refused, naming what to do or which.
  const std::map<std::string, double> three{{"a", 1}, {"b", 2}, {"c", 3}};
  CHECK_THROWS_WITH(nn_memory_fit(three, host, mb),
                    Contains("3 models") && Contains("at least 4") &&
                        Contains("reports activations"));
  std::map<std::string, double> zero = mb;
  zero["e"] = 0;
  CHECK_THROWS_WITH(nn_memory_fit(device, host, zero),
                    Contains("activation MB of e is 0") && Contains("positive"));
}
