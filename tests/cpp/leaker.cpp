// Creates a slice, starts a long sleep in it, prints the slice's directories, then dies by
// SIGKILL without cleaning up: what a crashed profiler leaves behind, for the stale-slice test
// (its guard killed first) and the guard's (`WORKLOAD_BINARY guarded`).
// `hold CORES`: creates a slice of a CORES-core device, prints its pid and the slice's CPUs, and
// sleeps until killed: another edgeprof process holding CPUs, for the CPU ledger's tests.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <edgeprof/edgeprof.hpp>

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "hold") {
    edgeprof::Slice slice(edgeprof::make_device("holder", std::stoi(argv[2]), 1.0, "64MiB"));
    std::printf("%d", static_cast<int>(::getpid()));
    for (int cpu : slice.plan().cpus) std::printf(" %d", cpu);
    std::printf("\n");
    std::fflush(stdout);
    for (;;) ::pause();
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s WORKLOAD_BINARY\n", argv[0]);
    return 64;
  }
  edgeprof::Slice slice(edgeprof::make_device("leaker", 1, 1.0, "64MiB"));
  edgeprof::Command command;
  command.argv = {argv[1], "fork-sleep"};
  command.stdout_stream = edgeprof::Stdio::discard();  // the test reads our stdout to EOF
  // fork-sleep exits at once, leaving its child asleep in the slice.
  edgeprof::Result result = slice.spawn(command).wait();
  // `guarded`: the slice's guard is left to remove it; otherwise it is killed first, as a
  // machine-wide kill would, and the slice is left for the next one to sweep.
  const bool guarded = argc > 2 && std::string(argv[2]) == "guarded";
  if (!guarded) {
    // The guard is this process's only child now (fork-sleep's grandchild was reparented).
    std::ifstream children("/proc/self/task/" + std::to_string(::getpid()) + "/children");
    for (int pid = 0; children >> pid;) ::kill(pid, SIGKILL);
  }
  std::printf("%d\n", result.exit_code.value_or(-1));
  for (const std::string& path : slice.paths()) std::printf("%s\n", path.c_str());
  std::fflush(stdout);
  ::kill(::getpid(), SIGKILL);
}
