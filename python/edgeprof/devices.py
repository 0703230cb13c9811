"""Devices: the built-in catalog, your own device files, and what a device is made of.

    from edgeprof import devices
    pi = devices.find_device("raspberry-pi-4")
    mine = devices.load_device_file("my-board.toml")
"""

from edgeprof._core import (
    CpuDescription,
    Device,
    FigureSource,
    PowerDescription,
    RuntimeTimes,
    SpeedStep,
    UserDevices,
    builtin_device,
    builtin_devices,
    catalog_devices,
    device_search_path,
    find_device,
    format_signed_size,
    format_size,
    load_device_file,
    parse_size,
    user_devices,
)

__all__ = [
    "CpuDescription",
    "Device",
    "FigureSource",
    "PowerDescription",
    "RuntimeTimes",
    "SpeedStep",
    "UserDevices",
    "builtin_device",
    "builtin_devices",
    "catalog_devices",
    "device_search_path",
    "find_device",
    "format_signed_size",
    "format_size",
    "load_device_file",
    "parse_size",
    "user_devices",
]
