#include "nn/runtime_table.hpp"

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

constexpr RuntimeRatingSpec kNcnnRating{
    .install = "pip install ncnn",
    .precision = "",
    .reads_graphs = true,
    .models = {},  // the reference graphs (graphs.cpp)
    .cache_name = "host-nn.json",
    .runner = "runner.py",
    .runner_args = {},
    .multi_thread = true,
};

// PyTorch's and ONNX Runtime's ratings time their models in eight passes through them all
// (torch_runner.py --rounds): on a shared VM whose speed wanders by a third or more over tens
// of seconds, one model timed in one go against another timed a minute later moved by 3-9% in
// the median and up to 22% (three ratings of the int8 models here, 2026-12-04), in passes by
// 1-4%, up to 16% (five); a rating takes about 1.6 times as long (estimated: 19 inferences per
// model against 12). --activations: each model's activation MB (NnRating::activation_mb, the
// memory term's), one more untimed inference each.
constexpr S kTorchArgs[] = {"--rounds=8", "--activations"};
constexpr RuntimeRatingSpec kTorchRating{
    .install = "pip install torch torchvision timm",
    .precision = "fp32",
    .reads_graphs = false,
    .models = kClassifiers,
    .cache_name = "host-nn-pytorch.json",
    .runner = "torch_runner.py",
    .runner_args = kTorchArgs,
    .multi_thread = true,  // --threads=N: torch.set_num_threads(N)
};

// PyTorch's int8 (qnnpack, TorchScript): a precision of PyTorch with its own device tables, so a
// rating of its own; a workload shows PyTorch's libraries either way, so it is named, not seen.
constexpr S kTorchInt8Args[] = {"--precision=int8", "--rounds=8", "--activations"};
constexpr RuntimeRatingSpec kTorchInt8Rating{
    .install = "pip install torch torchvision",
    .precision = "int8",
    .reads_graphs = false,
    .models = kQuantizable,
    .cache_name = "host-nn-pytorch-int8.json",
    .runner = "torch_runner.py",
    .runner_args = kTorchInt8Args,
    .multi_thread = true,  // --threads=N: torch.set_num_threads(N)
};

// The same models exported to ONNX by the same runner, timed in ONNX Runtime.
constexpr S kOrtArgs[] = {"--backend=onnxruntime", "--rounds=8", "--activations"};
constexpr RuntimeRatingSpec kOrtRating{
    .install = "pip install onnxruntime onnx torch torchvision timm",
    .precision = "fp32",
    .reads_graphs = false,
    .models = kClassifiers,
    .cache_name = "host-nn-onnxruntime.json",
    .runner = "torch_runner.py",
    .runner_args = kOrtArgs,
    .multi_thread = true,  // --threads=N: N intra-op threads
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

const char* runner_source(std::string_view file) {
  for (const RunnerSource& r : kRunners) {
    if (r.file == file) return r.source;
  }
  return nullptr;
}

}  // namespace edgeprof::detail
