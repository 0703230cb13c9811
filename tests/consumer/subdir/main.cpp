// Links against edgeprof built by add_subdirectory() (as a shared library) and calls into it.
// Creates no cgroups: the plan is a pure function of the device and the host facts given here.
// Also catches an error thrown inside the library by its type: a shared library built with
// hidden visibility must export the exception classes' type information.
#include <edgeprof/edgeprof.hpp>
#include <cstdint>
#include <iostream>

int main() {
  const edgeprof::Device& device = edgeprof::builtin_device("raspberry-pi-4");
  edgeprof::HostFacts host;
  host.cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  host.memory_bytes = edgeprof::parse_size("16GiB");
  const edgeprof::EmulationPlan plan = edgeprof::plan_emulation(device, host);
  std::cout << "edgeprof " << edgeprof::version() << ": " << device.name << " -> cpus "
            << edgeprof::format_cpu_list(plan.cpus) << ", " << plan.capacity_cores()
            << " cores, memory.max " << edgeprof::format_size(plan.memory_max_bytes) << "\n";
  try {
    const std::uint64_t bytes = edgeprof::parse_size("twelve");
    std::cerr << "parse_size(\"twelve\") did not throw: " << bytes << "\n";
    return 1;
  } catch (const edgeprof::DeviceError& e) {
    std::cout << "caught edgeprof::DeviceError: " << e.what() << "\n";
  }
  return plan.capacity_cores() > 0 ? 0 : 1;
}
