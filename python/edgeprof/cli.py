"""The ``edgeprof`` command line. Every subcommand calls the C++ core through the Python API.

Exit codes: the workload's own exit code for ``run``; 128+N when a signal N ended it (137 for
an out-of-memory kill); 124 when ``--timeout`` killed it; 2 for usage errors and for errors of
edgeprof itself (bad device, no permission, command not found); 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Optional, Sequence

import edgeprof
from edgeprof.workloads import WORKLOADS

EXAMPLES = """\
examples:
  edgeprof devices
  edgeprof run --device raspberry-pi-4 -- python3 infer.py --model mobilenet
  edgeprof run --cores 2 --speed 0.5 --memory 512MiB --timeout 60 -- ./train
  edgeprof run --device jetson-nano --json -- python3 infer.py > result.json
  edgeprof demo --device raspberry-pi-3b
"""


def _device(args: argparse.Namespace) -> edgeprof.Device:
    custom = (args.cores, args.speed, args.memory)
    if any(v is not None for v in custom):
        if args.device is not None:
            raise edgeprof.DeviceError("give either --device or --cores/--speed/--memory, not both")
        if None in custom:
            raise edgeprof.DeviceError(
                "a custom device needs all of --cores, --speed and --memory"
            )
        return edgeprof.Device(
            name="custom", cores=args.cores, core_speed=args.speed, memory=args.memory,
            swap=args.swap or 0,
        )
    return edgeprof.builtin_device(args.device or "raspberry-pi-4")


def _exit_status(result: edgeprof.Result) -> int:
    if result.timed_out:
        return 124
    if result.signal is not None:
        return 128 + result.signal
    return result.exit_code if result.exit_code is not None else 1


def _add_device_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("device (a built-in name, or a custom one)")
    g.add_argument("--device", help="built-in device name (default: raspberry-pi-4)")
    g.add_argument("--cores", type=int, help="custom device: number of cores")
    g.add_argument("--speed", type=float, help="custom device: core speed relative to a host core")
    g.add_argument("--memory", help="custom device: memory, e.g. 512MiB")
    g.add_argument("--swap", help="custom device: swap, e.g. 256MiB (default 0)")
    e = p.add_argument_group("emulation")
    e.add_argument("--cpu-period-us", type=int, default=edgeprof.DEFAULT_CPU_PERIOD_US,
                   help="CFS bandwidth period in microseconds (default %(default)s)")
    e.add_argument("--parent", help="cgroup to create slices beneath "
                   "(default: $EDGEPROF_CGROUP_PARENT, else this process's own cgroup)")
    e.add_argument("--allow-missing", action="store_true",
                   help="run even if a cgroup controller is missing; the result lists the "
                   "limits that were not applied")


def _run_options(args: argparse.Namespace) -> dict:
    return dict(cpu_period_us=args.cpu_period_us, parent=args.parent,
                allow_missing_controllers=args.allow_missing)


def cmd_devices(args: argparse.Namespace) -> int:
    devices = edgeprof.builtin_devices()
    if args.name:
        d = edgeprof.builtin_device(args.name)
        print(f"{d.name}\n  {d.description}\n  cores {d.cores}, core speed {d.core_speed} "
              f"(estimated), memory {edgeprof.format_size(d.memory_bytes)}\n  sources: {d.source}")
        return 0
    if args.json:
        print(json.dumps([
            {"name": d.name, "cores": d.cores, "core_speed": d.core_speed,
             "memory_bytes": d.memory_bytes, "description": d.description, "source": d.source}
            for d in devices], indent=2))
        return 0
    print(f"{'name':<22} {'cores':>5} {'speed':>6} {'memory':>9}  description")
    for d in devices:
        print(f"{d.name:<22} {d.cores:>5} {d.core_speed:>6.2f} "
              f"{edgeprof.format_size(d.memory_bytes):>9}  {d.description}")
    print("\ncore speed: one device core relative to a reference x86-64 core, estimated "
          "(see `edgeprof devices NAME`)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise edgeprof.Error("no command given: edgeprof run [options] -- COMMAND [ARGS...]")
    result = edgeprof.run(
        command, device=_device(args), timeout=args.timeout,
        # With --json, stdout carries only the JSON: the workload's stdout goes to stderr.
        stdout=sys.stderr.fileno() if args.json else None,
        **_run_options(args))
    if args.json:
        print(result.to_json())
    else:
        print(str(result), end="", file=sys.stderr)
    return _exit_status(result)


def cmd_demo(args: argparse.Namespace) -> int:
    device = _device(args)
    rows = []
    print(f"edgeprof demo: {len(WORKLOADS)} example workloads on {device.name} "
          f"({device.cores} cores x speed {device.core_speed}, "
          f"{edgeprof.format_size(device.memory_bytes)}), cgroup mode {edgeprof.cgroup_mode()}",
          file=sys.stderr)
    for i, (name, (script, extra, description)) in enumerate(WORKLOADS.items(), 1):
        print(f"[{i}/{len(WORKLOADS)}] {name}: {description} ...", file=sys.stderr, flush=True)
        result = edgeprof.run([sys.executable, str(script), *extra], device=device,
                              stdout=subprocess.DEVNULL, timeout=args.timeout,
                              **_run_options(args))
        rows.append((name, result))
    rows.sort(key=lambda row: (not row[1].ok, row[1].wall_time_s))
    if args.json:
        print(json.dumps([{"workload": n, "rank": i, **json.loads(r.to_json())}
                          for i, (n, r) in enumerate(rows, 1)], indent=2))
        return 0 if all(r.ok for _, r in rows) else 1
    print(f"\nmeasured on {device.name} (emulated); ranked by wall time")
    print(f"{'rank':>4}  {'workload':<10} {'wall s':>8} {'cpu s':>7} {'peak memory':>12} "
          f"{'throttled':>9}  outcome")
    for i, (name, r) in enumerate(rows, 1):
        peak = edgeprof.format_size(r.peak_memory_bytes) if r.peak_memory_bytes else "n/a"
        outcome = "ok" if r.ok else ("OOM-killed" if r.oom_killed else
                                     "timed out" if r.timed_out else f"failed ({r.exit_code})")
        print(f"{i:>4}  {name:<10} {r.wall_time_s:>8.3f} {r.cpu_user_s + r.cpu_system_s:>7.3f} "
              f"{peak:>12} {r.throttled_s:>8.3f}s  {outcome}")
    print("\nwall time: monotonic clock, exec to exit; cpu and peak memory: cgroup counters "
          f"({rows[0][1].peak_memory_source}); all measured, none projected")
    return 0 if all(r.ok for _, r in rows) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgeprof", description="Profile workloads under emulated edge devices.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"edgeprof {edgeprof.__version__}")
    sub = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")

    p = sub.add_parser("devices", help="list the built-in devices, or show one")
    p.add_argument("name", nargs="?", help="show this device with its sources")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("run", help="run a command on an emulated device",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_device_options(p)
    p.add_argument("--timeout", type=float, help="kill the workload after this many seconds")
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON on stdout (the workload's stdout goes to stderr)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="profile the bundled example workloads and rank them")
    _add_device_options(p)
    p.add_argument("--timeout", type=float, default=300.0, help="per workload (default 300 s)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except edgeprof.Error as e:
        print(f"edgeprof: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("edgeprof: interrupted; the workload was killed and its slice removed",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
