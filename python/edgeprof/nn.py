"""Neural-network inference speeds: this host's rating on the reference graphs, a device's nn
speed from its published times, the inference runtimes edgeprof knows, and the interval a
device time falls in.

    from edgeprof import nn
    rating = nn.measure_nn_rating()
    s = nn.nn_speed(edgeprof.find_device("jetson-nano").nn_ms, rating.host_ms)
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
    measure_host_scaling,
    measure_nn_rating,
    nn_memory_fit,
    nn_memory_predict,
    nn_runtimes,
    nn_speed,
    nn_speed_from_scores,
    reference_graphs,
    time_interval,
    workload_scaling,
)

__all__ = [
    "HostScaling",
    "NnMemoryFit",
    "NnRating",
    "NnRuntime",
    "NnSpeed",
    "ReferenceGraph",
    "TimeInterval",
    "cached_nn_rating",
    "measure_host_scaling",
    "measure_nn_rating",
    "nn_memory_fit",
    "nn_memory_predict",
    "nn_runtimes",
    "nn_speed",
    "nn_speed_from_scores",
    "reference_graphs",
    "time_interval",
    "workload_scaling",
]
