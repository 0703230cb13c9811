// Conversions of Python arguments that several bind_*.cpp files share: the device a call names,
// the slice options every run takes, and the interval, timeout and Ctrl-C check of a wait. A
// helper that one file uses stays in that file.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <edgeprof/device.hpp>
#include <edgeprof/slice.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgeprof_py {

// A C++ text as a Python str: bytes that are not UTF-8 (a device file's, a report's, a
// workload's argument) are kept as \x escapes, not raised as a UnicodeDecodeError in its place.
pybind11::str text(std::string_view s);

// A command's argument or a path as os.fsdecode() gives it: bytes that are not UTF-8 become
// surrogate escapes, which os.fsencode() turns back into the same bytes.
pybind11::str fs_text(std::string_view s);

// C++ texts as a list of str, each as text() (fs_text()) gives it.
pybind11::list texts(const std::vector<std::string>& v);
pybind11::list fs_texts(const std::vector<std::string>& v);

// Getters for def_property_readonly of a C++ text member, converted as text() (a message, a
// note: its non-UTF-8 bytes as \x escapes) or fs_text() (a path: as os.fsdecode() gives it).
// pybind11's own std::string conversion raises UnicodeDecodeError on such bytes.
template <class C>
auto text_of(std::string C::*member) {
  return [member](const C& c) { return text(c.*member); };
}
template <class C>
auto fs_text_of(std::string C::*member) {
  return [member](const C& c) { return fs_text(c.*member); };
}
template <class C>
auto texts_of(std::vector<std::string> C::*member) {
  return [member](const C& c) { return texts(c.*member); };
}

// A path given as str, bytes or os.PathLike, as the bytes the OS takes (os.fsencode): a str
// holding os.fsdecode()'s surrogate escapes of a non-UTF-8 name is its bytes again. Another
// type is a TypeError naming `what` ("find_device's name_or_path").
std::string fs_path(const pybind11::handle& value, std::string_view what = "a path");

// A Device, the name or alias of one (find_device), or the path of a device file (str or
// os.PathLike).
edgeprof::Device to_device(const pybind11::object& value);

// The slice options of run(), Slice, plan_emulation(), compare() and calibrate_speed()'s keyword
// arguments (parent None: the default parent).
edgeprof::SliceOptions to_slice_options(const pybind11::object& parent, std::uint64_t cpu_period_us,
                                        const std::vector<int>& cpus, bool allow_missing,
                                        std::optional<double> iteration_time, bool keep_warm,
                                        const std::string& speed_kind, bool thread_env,
                                        const std::string& core_emulation, bool core_scaling,
                                        std::optional<double> quota_scale,
                                        std::optional<bool> drift_check,
                                        std::optional<double> workload_scaling = std::nullopt,
                                        std::optional<bool> count_activations = std::nullopt);

// Lets Ctrl-C reach Python while C++ waits with the GIL released: the KeyboardInterrupt is
// thrown through the wait, which kills the workload first.
edgeprof::InterruptCheck python_signals();

// Seconds (None or 0 = no sampling) -> the sampler's interval; the C++ side checks the range.
// Seconds past nanoseconds' range are refused here, where they are still seconds.
std::chrono::nanoseconds to_interval(std::optional<double> seconds);

// Checked by the core (a non-positive or NaN timeout is an Error; inf waits for ever).
std::optional<std::chrono::duration<double>> to_timeout(std::optional<double> seconds);

// A measurement's `timeout_s` -> its options' whole seconds: an Error naming `function` unless
// it is a number of at least 1.
std::chrono::seconds to_whole_seconds(const char* function, double timeout_s);

}  // namespace edgeprof_py
