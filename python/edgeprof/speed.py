"""Speed: how fast this host and a device's cores are (the micro-benchmark suite, the reference
core's rating, calibrating a core speed from your own device's times), and what a CPU quota
buys on this host (its own share, its drift).

    from edgeprof import speed
    host = speed.host_calibration()
    cal = speed.calibrate_speed(device, [("resnet", ["python3", "r.py"], 0.41)])
"""

from edgeprof._core import (
    REFERENCE_CORE,
    REFERENCE_CORE_MIPS,
    SUITE_VERSION,
    VECTOR_KERNEL_VERSION,
    CoreScores,
    HostCalibration,
    HostDrift,
    PeriodSpeedFit,
    QuotaShare,
    QuotaSharePoint,
    ReferenceRating,
    SpeedCalibration,
    SpeedModel,
    WorkloadSpeedFit,
    cached_quota_share,
    cached_reference_rating,
    calibrate_speed,
    fit_speed_model,
    host_calibration,
    measure_host_drift,
    measure_quota_share,
    measure_reference_rating,
    run_suite,
    solve_core_speed,
    speed_from_scores,
    vector_units,
    why_not_cached_quota_share,
    why_not_cached_reference_rating,
)

__all__ = [
    "REFERENCE_CORE",
    "REFERENCE_CORE_MIPS",
    "SUITE_VERSION",
    "VECTOR_KERNEL_VERSION",
    "CoreScores",
    "HostCalibration",
    "HostDrift",
    "PeriodSpeedFit",
    "QuotaShare",
    "QuotaSharePoint",
    "ReferenceRating",
    "SpeedCalibration",
    "SpeedModel",
    "WorkloadSpeedFit",
    "cached_quota_share",
    "cached_reference_rating",
    "calibrate_speed",
    "fit_speed_model",
    "host_calibration",
    "measure_host_drift",
    "measure_quota_share",
    "measure_reference_rating",
    "run_suite",
    "solve_core_speed",
    "speed_from_scores",
    "vector_units",
    "why_not_cached_quota_share",
    "why_not_cached_reference_rating",
]
