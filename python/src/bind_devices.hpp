// The Python side of include/edgeprof/device.hpp, catalog.hpp and plan.hpp: devices, the catalog
// and device files, sizes, and a device's emulation plan on this host. Called once from
// PYBIND11_MODULE in bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

// Adds FigureSource, CpuDescription, PowerDescription, SpeedStep, Device, UserDevices,
// ThreadsProjection and EmulationPlan, and the functions that find, load and plan devices
// (builtin_devices, find_device, load_device_file, parse_size, format_size, cgroup_mode,
// plan_emulation, ...) to `m`.
void bind_devices(pybind11::module_& m);
