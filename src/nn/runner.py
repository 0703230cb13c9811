# edgeprof's nn runner: runs reference CNN graphs with ncnn, one thread unless told (--threads),
# zero weights, the way ncnn's benchncnn times them (pool allocators, untimed warm-up, then timed
# inferences), and prints one line per graph: "<name> <median ms> <min ms> <max ms>", then
# "cpu <name> <median ms>": the process's CPU time per inference, the work without the time it
# waited for a CPU (another process on it, a hypervisor's steal). The median of the timed
# inferences, not benchncnn's average: one slowed by another process barely moves it.
# Usage: python3 runner.py GRAPH_DIR WARMUP LOOPS [--threads=N] [GRAPH...]
# GRAPH_DIR holds <name>.param and graphs.txt (name width height channels input output).
import statistics
import sys
import time


def main() -> int:
    directory, warmup, loops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rest = sys.argv[4:]
    threads = 1
    if rest and rest[0].startswith("--threads="):
        threads = int(rest.pop(0).split("=", 1)[1])
    wanted = set(rest)
    try:
        import ncnn
    except ImportError as e:
        print(f"error: the Python package ncnn is not installed ({e}); "
              f"install it with: {sys.executable} -m pip install ncnn", file=sys.stderr)
        return 3
    print(f"runtime ncnn {ncnn.__version__} (Python {sys.version.split()[0]})", flush=True)
    blob_pool = ncnn.UnlockedPoolAllocator()
    workspace_pool = ncnn.PoolAllocator()
    opt = ncnn.Option()
    opt.lightmode = True
    opt.num_threads = threads
    opt.blob_allocator = blob_pool
    opt.workspace_allocator = workspace_pool
    opt.use_winograd_convolution = True
    opt.use_sgemm_convolution = True
    opt.use_int8_inference = True
    opt.use_fp16_packed = True
    opt.use_fp16_storage = True
    opt.use_fp16_arithmetic = True
    opt.use_int8_storage = True
    opt.use_int8_arithmetic = True
    opt.use_packing_layout = True
    ran = 0
    with open(f"{directory}/graphs.txt") as f:
        graphs = [line.split() for line in f if line.strip()]
    for name, w, h, c, blob_in, blob_out in graphs:
        if wanted and name not in wanted:
            continue
        blob_pool.clear()
        workspace_pool.clear()
        net = ncnn.Net()
        net.opt = opt
        if net.load_param(f"{directory}/{name}.param") != 0:
            print(f"error: ncnn could not load {directory}/{name}.param", file=sys.stderr)
            return 4
        net.load_model(ncnn.DataReaderFromEmpty())
        data = ncnn.Mat(int(w), int(h), int(c))
        data.fill(0.01)

        def infer() -> None:
            ex = net.create_extractor()
            ex.input(blob_in, data)
            ret, _ = ex.extract(blob_out)
            if ret != 0:
                raise RuntimeError(f"ncnn could not run {name} (extract returned {ret})")

        for _ in range(warmup):
            infer()
        times, cpu_times = [], []
        for _ in range(loops):
            start, cpu_start = time.perf_counter(), time.process_time()
            infer()
            cpu_times.append((time.process_time() - cpu_start) * 1000)
            times.append((time.perf_counter() - start) * 1000)
        print(f"{name} {statistics.median(times):.4f} {min(times):.4f} {max(times):.4f}",
              flush=True)
        cpu_ms = statistics.median(cpu_times)
        if cpu_ms > 0:  # a CPU clock too coarse to time one inference says nothing
            print(f"cpu {name} {cpu_ms:.4f}", flush=True)
        ran += 1
        net.clear()
    return 0 if ran else 5


if __name__ == "__main__":
    sys.exit(main())
