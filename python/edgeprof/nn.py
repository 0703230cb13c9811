"""Neural-network inference speeds: this host's rating on the reference graphs, a device's nn
speed from its published times, the inference runtimes edgeprof knows, and the interval a
device time falls in.

    from edgeprof import nn
    rating = nn.measure_nn_rating()
    s = nn.nn_speed(edgeprof.find_device("jetson-nano").nn_ms, rating.host_ms)
    m = nn.memory_intensity(my_model, torch.randn(1, 3, 224, 224))  # needs PyTorch here
    pi = edgeprof.find_device("raspberry-pi-4b-4gb").for_runtime(
        "pytorch", memory_mb_per_ms=m.mb_per_ms)
"""

from edgeprof._core import (
    HostScaling,
    NnMemoryFit,
    NnRating,
    NnRuntime,
    NnSpeed,
    ReferenceGraph,
    TimeInterval,
    cached_nn_rating,
    default_ncnn_python,
    device_interval,
    is_nn_precision,
    measure_host_scaling,
    measure_nn_rating,
    nn_memory_fit,
    nn_memory_predict,
    nn_runtimes,
    nn_speed,
    nn_speed_from_scores,
    reference_graphs,
    set_default_ncnn_python,
    time_interval,
    why_not_cached_nn_rating,
    workload_scaling,
)
from edgeprof._intensity import MemoryIntensity, memory_intensity

__all__ = [
    "HostScaling",
    "MemoryIntensity",
    "NnMemoryFit",
    "NnRating",
    "NnRuntime",
    "NnSpeed",
    "ReferenceGraph",
    "TimeInterval",
    "cached_nn_rating",
    "default_ncnn_python",
    "device_interval",
    "is_nn_precision",
    "measure_host_scaling",
    "measure_nn_rating",
    "memory_intensity",
    "nn_memory_fit",
    "nn_memory_predict",
    "nn_runtimes",
    "nn_speed",
    "nn_speed_from_scores",
    "reference_graphs",
    "set_default_ncnn_python",
    "time_interval",
    "why_not_cached_nn_rating",
    "workload_scaling",
]
