#include "nn/runtime_table.hpp"

#include <fmt/format.h>

#include "edgeprof/error.hpp"
#include "nn_runner.hpp"

namespace edgeprof::detail {

namespace {

using S = std::string_view;

// The 13 image classifiers of the published PyTorch and ONNX Runtime tables of three boards
// (docs/fidelity.md): timm's names; shufflenet_v2_x1_0 is torchvision's.
constexpr S kClassifiers[] = {
    "efficientnet_b0",       "ese_vovnet19b_dw",      "mixnet_s",  "mnasnet_a1",
    "mobilenetv2_050",       "mobilenetv2_100",       "mobilenetv2_110d",
    "mobilenetv3_large_100", "mobilenetv3_small_050", "repvgg_b0", "resnet18",
    "shufflenet_v2_x1_0",    "vgg13"};

// The architectures of torchvision.models.quantization, which the PyTorch tutorial's Raspberry
// Pi 4 table times in int8 (docs/devices.md).
constexpr S kQuantizable[] = {
    "googlenet",          "inception_v3",       "mobilenet_v2",       "mobilenet_v3_large",
    "resnet18",           "resnet50",           "resnext101_32x8d",   "shufflenet_v2_x0_5",
    "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"};

// The own share under a quota (measure_quota_share()): three models each, of small, medium and
// large cost, timed over at least a second each (a throttled run averages many periods; PyTorch's
// own share differed by model, 1.28-1.49 for the small ones and 1.05-1.11 for VGG-13 at 0.05
// and 0.13 of a CPU here, docs/fidelity.md). ResNet-18 rather than VGG-13 as the large one: a
// tenth of VGG-13's time under the smallest quota.
constexpr S kNcnnShareGraphs[] = {"mobilenet_v2", "regnety_400m", "squeezenet"};
constexpr S kClassifierShare[] = {"mixnet_s", "mobilenetv2_100", "resnet18"};
constexpr S kQuantizableShare[] = {"mobilenet_v2", "shufflenet_v2_x1_0", "resnet18"};
constexpr S kTorchShareArgs[] = {"--mean", "--min-time=1"};
constexpr S kTorchInt8ShareArgs[] = {"--precision=int8", "--mean", "--min-time=1"};
constexpr S kOrtShareArgs[] = {"--backend=onnxruntime", "--mean", "--min-time=1"};

constexpr RuntimeRatingSpec kNcnnRating{
    .install = "pip install ncnn",
    .precision = "",
    .reads_graphs = true,
    .models = {},  // the reference graphs (graphs.cpp)
    .cache_name = "host-nn.json",
    .runner = "runner.py",
    .runner_args = {},
    .multi_thread = true,
    .share_models = kNcnnShareGraphs,
    .share_args = {},
    .share_exports = false,
    .share_cache_name = "host-quota-share.json",
    .share_seconds = 80,  // about 80 s on the EPYC, 40-52 s on the Xeon
};

// PyTorch's and ONNX Runtime's ratings time their models in eight passes through them all
// (torch_runner.py --rounds): on a shared VM whose speed wanders by a third or more over tens
// of seconds, one model timed in one go against another timed a minute later moved by 3-9% in
// the median and up to 22% (three ratings of the int8 models here, 2026-12-04), in passes by
// 1-4%, up to 16% (five, with one inference a pass). In each pass a model runs for at least a
// quarter of a second (--min-time=2 over the eight; one inference where it takes longer) and
// its time is the mean of all its inferences (--mean), as a workload's inference loop runs and
// as the boards' published tables were timed (one warm-up, the mean of ten): one inference
// after one warm-up, the passes' first way, took 1.0-1.5 times as long (1.1 in the median, the
// small models the most; ONNX Runtime on an Intel Xeon, 2026-12-05, measured,
// docs/fidelity.md), and ONNX Runtime's emulated runs there ran about that much faster than the
// speed they were given (estimated); a rating takes 41-66 s (measured there). --activations:
// each model's activation MB (NnRating::activation_mb, the memory term's), one more untimed
// inference each.
constexpr S kTorchArgs[] = {"--rounds=8", "--min-time=2", "--mean", "--activations"};
constexpr RuntimeRatingSpec kTorchRating{
    .install = "pip install torch torchvision timm",
    .precision = "fp32",
    .reads_graphs = false,
    .models = kClassifiers,
    .cache_name = "host-nn-pytorch.json",
    .runner = "torch_runner.py",
    .runner_args = kTorchArgs,
    .multi_thread = true,  // --threads=N: torch.set_num_threads(N)
    .share_models = kClassifierShare,
    .share_args = kTorchShareArgs,
    .share_exports = false,  // eager models are built, never read
    .share_cache_name = "host-quota-share-pytorch.json",
    .share_seconds = 780,  // 12.7 and 12.8 minutes
};

// PyTorch's int8 (qnnpack, TorchScript): a precision of PyTorch with its own device tables, so a
// rating of its own; a workload shows PyTorch's libraries either way, so it is named, not seen.
constexpr S kTorchInt8Args[] = {"--precision=int8", "--rounds=8", "--min-time=2", "--mean",
                                 "--activations"};
constexpr RuntimeRatingSpec kTorchInt8Rating{
    .install = "pip install torch torchvision",
    .precision = "int8",
    .reads_graphs = false,
    .models = kQuantizable,
    .cache_name = "host-nn-pytorch-int8.json",
    .runner = "torch_runner.py",
    .runner_args = kTorchInt8Args,
    .multi_thread = true,  // --threads=N: torch.set_num_threads(N)
    .share_models = kQuantizableShare,
    .share_args = kTorchInt8ShareArgs,
    .share_exports = true,  // DIR/<model>.int8.pt
    .share_cache_name = "host-quota-share-pytorch-int8.json",
    .share_seconds = 900,  // 14.7 minutes on the EPYC and on the Xeon
};

// The same models exported to ONNX by the same runner, timed in ONNX Runtime. Activations by
// the graph rule (--activations=graph: the ONNX graph's nodes, which a workload with only the
// ONNX file can count; their memory term fitted the three boards' published times as well as
// the PyTorch layers', estimated, docs/fidelity.md).
constexpr S kOrtArgs[] = {"--backend=onnxruntime", "--rounds=8", "--min-time=2", "--mean",
                           "--activations=graph"};
constexpr RuntimeRatingSpec kOrtRating{
    .install = "pip install onnxruntime onnx torch torchvision timm",
    .precision = "fp32",
    .reads_graphs = false,
    .models = kClassifiers,
    .cache_name = "host-nn-onnxruntime.json",
    .runner = "torch_runner.py",
    .runner_args = kOrtArgs,
    .multi_thread = true,  // --threads=N: N intra-op threads
    .share_models = kClassifierShare,
    .share_args = kOrtShareArgs,
    .share_exports = true,  // DIR/<model>.onnx: the timed runs need no PyTorch
    .share_cache_name = "host-quota-share-onnxruntime.json",
    .share_seconds = 180,  // 2.8 minutes; 3.1 with its rating on the Xeon
};

constexpr S kNcnnStems[] = {"libncnn", "ncnn"};
constexpr S kTorchStems[] = {"libtorch_cpu", "libtorch"};
constexpr S kOrtStems[] = {"libonnxruntime", "onnxruntime_pybind11_state"};
constexpr S kTfliteStems[] = {"libtensorflowlite", "libtensorflowlite_c",
                              "_pywrap_tensorflow_interpreter_wrapper"};
constexpr S kTensorflowStems[] = {"libtensorflow_framework", "libtensorflow", "libtensorflow_cc",
                                  "_pywrap_tensorflow_internal"};
constexpr S kOpenvinoStems[] = {"libopenvino", "_pyopenvino"};
constexpr S kTvmStems[] = {"libtvm_runtime", "libtvm"};
constexpr S kMnnStems[] = {"libMNN", "_mnncengine"};

constexpr RuntimeSpec kTable[] = {
    {"ncnn", "ncnn", kNcnnStems, &kNcnnRating, ""},
    {"pytorch", "PyTorch", kTorchStems, &kTorchRating, ""},
    {"onnxruntime", "ONNX Runtime", kOrtStems, &kOrtRating, ""},
    {"pytorch-int8", "PyTorch int8", {}, &kTorchInt8Rating, "pytorch"},
    {"tensorflow-lite", "TensorFlow Lite", kTfliteStems, nullptr, ""},
    {"tensorflow", "TensorFlow", kTensorflowStems, nullptr, ""},
    {"openvino", "OpenVINO", kOpenvinoStems, nullptr, ""},
    {"tvm", "TVM", kTvmStems, nullptr, ""},
    {"mnn", "MNN", kMnnStems, nullptr, ""},
};

}  // namespace

std::span<const RuntimeSpec> runtime_table() { return kTable; }

const RuntimeSpec* find_runtime(std::string_view id) {
  for (const RuntimeSpec& r : kTable) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

const RuntimeSpec& rated_runtime(std::string_view id, std::string_view what) {
  const RuntimeSpec* r = find_runtime(id);
  if (r && r->rating) return *r;
  std::string known;
  for (const RuntimeSpec& k : kTable) {
    if (k.rating) known += fmt::format("{}{}", known.empty() ? "" : ", ", k.id);
  }
  throw Error(fmt::format("{}: {} '{}'; give one of: {}", what,
                          r ? "edgeprof recognises but cannot run the runtime"
                            : "no runtime is named",
                          id, known));
}

std::string share_duration(std::string_view id) {
  const RuntimeSpec* spec = find_runtime(id);
  const int s = spec && spec->rating ? spec->rating->share_seconds : 0;
  if (s <= 0) return "a few minutes";
  if (s < 120) return fmt::format("about {} s", s);
  return fmt::format("about {} minutes", (s + 30) / 60);
}

std::string remeasure_command(std::string_view id) {
  if (id == "ncnn") return "`edgeprof calibrate-host --nn --remeasure`";
  return fmt::format("`edgeprof calibrate-host --nn --runtime {} --remeasure --python PY`", id);
}

const char* runner_source(std::string_view file) {
  for (const RunnerSource& r : kRunners) {
    if (r.file == file) return r.source;
  }
  return nullptr;
}

}  // namespace edgeprof::detail
