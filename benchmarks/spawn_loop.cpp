// Spawns /bin/true N times in one reused slice, with the default sampling or without, and
// nothing else: the difference between two counts of instructions (callgrind) is the cost of
// N spawns. Usage: edgeprof_spawn_loop N [sampled|off]. Exit: 0 done, 1 error, 2 usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "edgeprof/edgeprof.hpp"

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 0;
  const char* mode = argc > 2 ? argv[2] : "sampled";
  if (n < 1 || (std::strcmp(mode, "sampled") != 0 && std::strcmp(mode, "off") != 0)) {
    std::fprintf(stderr, "usage: edgeprof_spawn_loop N [sampled|off]\n");
    return 2;
  }
  try {
    edgeprof::Device device;
    device.name = "loop";
    device.cores = 1;
    device.memory_bytes = 256ull << 20;
    edgeprof::Slice slice(device);
    edgeprof::SpawnOptions options;
    if (std::strcmp(mode, "off") == 0) options.sample_interval = std::chrono::nanoseconds(0);
    edgeprof::Command command;
    command.argv = {"/bin/true"};
    for (int i = 0; i < n; ++i) {
      const edgeprof::Result r = slice.spawn(command, options).wait();
      if (!r.ok()) {
        std::fprintf(stderr, "edgeprof_spawn_loop: run %d failed: %s\n", i + 1,
                     edgeprof::to_text(r).c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "edgeprof_spawn_loop: %s\n", e.what());
    return 1;
  }
  return 0;
}
