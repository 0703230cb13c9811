"""The ``edgeprof`` command line. Every subcommand calls the C++ core through the Python API.

Exit codes: the workload's own exit code for ``run`` (with ``--repeat``, that of the first run
that failed); 128+N when a signal N ended it (137 for an out-of-memory kill); 124 when
``--timeout`` killed it; 2 for usage errors and for errors of edgeprof itself (bad device, no
permission, command not found, unreadable report); 130 on Ctrl-C; 143 on SIGTERM (what
systemd, Kubernetes, Slurm and ``timeout(1)`` send) and 129 on SIGHUP (a closed terminal or ssh
session), which, like Ctrl-C, kill the workload and remove its slice first.
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from typing import Optional, Sequence

import edgeprof
from edgeprof import _files
from edgeprof._compare import _said
from edgeprof.workloads import WORKLOADS

EXAMPLES = """\
examples:
  edgeprof devices
  edgeprof devices show raspberry-pi-4
  edgeprof run --device raspberry-pi-4 -- python3 infer.py --model mobilenet
  edgeprof run --device ./my-board.toml -- python3 infer.py
  edgeprof run --cores 2 --speed 0.5 --memory 512MiB --timeout 60 -- ./train
  edgeprof run --device jetson-nano --json -- python3 infer.py > result.json
  edgeprof run --device raspberry-pi-4 --interval 1ms --json r.json --csv r.csv -- ./infer
  edgeprof run --device raspberry-pi-4 --repeat 5 --warmup 1 -- python3 infer.py
  edgeprof show r.json
  edgeprof show r.json --csv r.csv
  edgeprof compare -w "small=python3 infer.py --model small" -w "big=python3 infer.py --model big" \\
      --device raspberry-pi-4 --device jetson-nano --repeat 5
  edgeprof figures runs/*.json --csv calibration.csv   # then add a device_wall_time_s column
  edgeprof fit calibration.csv --x wall_time_s --y device_wall_time_s -o cal.json
  edgeprof project r.json --calibrations cal.json
  edgeprof calibrate-speed --device raspberry-pi-4 -w "mobilenet=python3 infer.py mobilenet" \\
      --measured mobilenet=0.84 --save my-pi4.json
  edgeprof calibrate-host --nn
  edgeprof demo --device raspberry-pi-3b
"""


def _examples(command: str) -> str:
    """EXAMPLES' lines of one command (each with its continuation lines), as its --help's
    epilog: every command printed the whole list, and show, demo and calibrate-host none."""
    lines, keep = [], False
    for line in EXAMPLES.splitlines()[1:]:
        if not line.startswith("      "):  # a continuation line is indented further
            keep = (line.strip() + " ").startswith(f"edgeprof {command} ")
        if keep:
            lines.append(line)
    return "examples:\n" + "\n".join(lines) if lines else ""


def _device(args: argparse.Namespace) -> edgeprof.Device:
    return _for_threads(_for_runtime(_named_or_custom_device(args), args), args.threads)


def _for_runtime(device: edgeprof.Device, args: argparse.Namespace) -> edgeprof.Device:
    if args.runtime is None:
        return device
    memory = getattr(args, "memory_mb_per_ms", None)  # not every command has it
    return device.for_runtime(args.runtime, memory_mb_per_ms=memory or 0.0)


def _named_or_custom_device(args: argparse.Namespace) -> edgeprof.Device:
    custom = (args.cores, args.speed, args.reference_speed, args.memory)
    if args.swap is not None and all(v is None for v in custom):
        raise edgeprof.DeviceError(
            "--swap is part of a custom device (--cores, --speed, --memory): a built-in or "
            "file device has its own swap (edgeprof devices show NAME)")
    if any(v is not None for v in custom):
        if args.device is not None:
            raise edgeprof.DeviceError(
                "give either --device or --cores/--speed/--memory, not both"
            )
        if args.speed is not None and args.reference_speed is not None:
            raise edgeprof.DeviceError(
                "give either --speed (relative to a host core) or --reference-speed "
                "(relative to the catalog's reference core), not both"
            )
        speed_given = args.speed is not None or args.reference_speed is not None
        if args.cores is None or args.memory is None or not speed_given:
            raise edgeprof.DeviceError(
                "a custom device needs all of --cores, --speed (or --reference-speed) and "
                "--memory"
            )
        return edgeprof.Device(
            name="custom", cores=args.cores, core_speed=args.speed,
            reference_speed=args.reference_speed, memory=args.memory, swap=args.swap or 0,
        )
    return edgeprof.find_device(args.device or "raspberry-pi-4")


def _for_threads(device: edgeprof.Device, threads: Optional[int],
                 warn: bool = True) -> edgeprof.Device:
    if warn and threads is not None and threads > device.cores:
        # Not refused: a workload may start more threads than the board has cores (they share
        # them there too); but --threads narrows a device only, and here it changes nothing.
        print(f"edgeprof: warning: --threads {threads} is more than {device.name}'s "
              f"{device.cores} cores: it is emulated whole, and the {threads} threads share its "
              f"{device.cores} cores as on the device (--threads narrows a device to fewer)",
              file=sys.stderr)
    return device.for_threads(threads) if threads is not None else device


def _exit_status(result: edgeprof.Result) -> int:
    if result.timed_out:
        return 124
    if result.signal is not None:
        return 128 + result.signal
    return result.exit_code if result.exit_code is not None else 1


# The runtimes a rating can be measured with (edgeprof.nn.nn_runtimes(), ncnn first): the help
# names what the library's table has.
_OTHER_RUNTIMES = " or ".join(r.id for r in edgeprof.nn.nn_runtimes() if r.id != "ncnn")
_RUNTIME_HELP = (f"emulate the device at its speed with the workload's runtime: {_OTHER_RUNTIMES} "
                 "(its published times with that runtime against this host's rating with it, "
                 "`edgeprof calibrate-host --nn --runtime R`; catalog devices with such times: "
                 "docs/devices.md) or ncnn (its nn speed); default: the --speed-kind, and at "
                 "automatic, such a device switches to the speed of the runtime the workload "
                 "loads when it is seen (never to a precision of one, such as pytorch-int8: "
                 "the workload's libraries are the same, so name it)")


_MEMORY_HELP = ("with --runtime (not ncnn): the workload's activations in MB per ms of this "
                "host's one-thread time with it (edgeprof.nn.memory_intensity): its own speed "
                "by the board's memory term, a multiple of this host's time plus a cost per MB, "
                "fitted to the board's published times (estimated; docs/devices.md)")


def _add_device_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("device (a name, a device file, or a custom one)")
    g.add_argument("--device", help="a device name from `edgeprof devices`, or the path of a "
                   "device file (.toml or .json; default: raspberry-pi-4)")
    g.add_argument("--cores", type=_count, help="custom device: number of cores")
    g.add_argument("--speed", type=float, help="custom device: core speed relative to a host core")
    g.add_argument("--reference-speed", type=float, metavar="SPEED",
                   help="custom device: core speed relative to the catalog's reference core, "
                   "as published figures give it; divided by this host's (`edgeprof "
                   "calibrate-host --reference`)")
    g.add_argument("--memory", help="custom device: memory, e.g. 512MiB")
    g.add_argument("--swap", help="custom device: swap, e.g. 256MiB (default 0)")
    g.add_argument("--threads", type=_count, metavar="N",
                   help="the workload's busy threads: with fewer than the device's cores, "
                   "emulate N of them (1: one core; more: pooled, or projected from one core "
                   "where auto projects; docs/threads.md)")
    g.add_argument("--runtime", choices=[r.id for r in edgeprof.nn.nn_runtimes()],
                   help=_RUNTIME_HELP)
    g.add_argument("--memory-mb-per-ms", type=float, metavar="M", help=_MEMORY_HELP)
    _add_emulation_options(p)


def _add_emulation_options(p: argparse.ArgumentParser) -> None:
    e = p.add_argument_group("emulation")
    e.add_argument("--cpu-period-us", type=_whole, default=0,
                   help="CFS bandwidth period in microseconds (default: 10000, longer where "
                   "several CPUs share the quota so that threads share it evenly; "
                   "docs/period.md)")
    e.add_argument("--iteration-time", type=_iteration_time, metavar="TIME",
                   help="the workload's typical iteration on the device (e.g. 20ms): the CFS "
                   "period becomes a tenth of it, within 5-100 ms (docs/period.md)")
    e.add_argument("--parent", help="cgroup to create slices beneath "
                   "(default: $EDGEPROF_CGROUP_PARENT, else this process's own cgroup)")
    e.add_argument("--allow-missing", action="store_true",
                   help="run even if a cgroup controller is missing; the result lists the "
                   "limits that were not applied")
    e.add_argument("--speed-kind", type=_speed_kind, default="automatic",
                   metavar="{automatic,nn,integer}",
                   help="the kind of speed to emulate: nn (CNN inference, from published ncnn "
                   "times and this host's; `edgeprof calibrate-host --nn`), integer (7-Zip's "
                   "rating) or automatic (auto; default: nn where the device has it; "
                   "docs/fidelity.md)")
    e.add_argument("--no-keep-warm", dest="keep_warm", action="store_false",
                   help="do not keep the slice's CPUs busy while a throttled workload runs "
                   "(by default idle-priority threads outside the slice keep them from "
                   "halting, so the quota buys the work it should; docs/keep-warm.md)")
    e.add_argument("--no-thread-env", dest="thread_env", action="store_false",
                   help="leave the workload's environment alone (by default OMP_NUM_THREADS "
                   "and the like get the device's core count and OpenMP threads wait "
                   "passively under a quota, and glibc's malloc thresholds are settled as "
                   "this host's nn ratings had them, where the environment does not set them; "
                   "docs/threads.md)")
    e.add_argument("--core-scaling", action="store_true",
                   help="with --core-emulation per-core at the nn speed: each core's quota "
                   "follows the number of busy threads as the board's published one- and "
                   "multi-thread times scale (off by default: it made every device too slow "
                   "here; docs/threads.md)")
    e.add_argument("--quota-scale", type=_quota_scale, default=None, metavar="X|auto",
                   help="the CPU quota times X (0.5 to 4), for the work a throttled slice "
                   "loses on this host; auto (default): a device at its nn speed gets this "
                   "host's measured own share (`calibrate-host --nn`), others 1 "
                   "(docs/fidelity.md)")
    e.add_argument("--drift-check", action=argparse.BooleanOptionalAction, default=None,
                   help="probe this host's inference speed just before the run (ncnn's, about "
                   "half a second; at another runtime's speed that runtime's: tens of seconds) "
                   "and correct a device's nn speed for the host's drift since its rating, "
                   "beyond 10%%, "
                   "and check this host's own share under the plan's quota (2-6 s), "
                   "following it where it moved 1.5x (default: off, or EDGEPROF_DRIFT_CHECK=1; "
                   "docs/fidelity.md)")
    e.add_argument("--count-activations", action=argparse.BooleanOptionalAction, default=None,
                   help="count a PyTorch or ONNX Runtime workload's activations in one "
                   "inference and its CPU time in five at one thread, and run a device with "
                   "published times with that runtime at its speed with it with that memory "
                   "term from then on (default: on, unless EDGEPROF_COUNT_ACTIVATIONS=0; "
                   "EDGEPROF_COUNT_ONNXRUNTIME=0 for ONNX Runtime's alone; docs/devices.md, "
                   "\"A workload's own speed\")")
    e.add_argument("--workload-scaling", type=float, default=None, metavar="X",
                   help="with projected core emulation: the workload's own speed-up from one "
                   "thread to two on this host over the reference graphs' "
                   "(edgeprof.nn.workload_scaling()), 0.5 to 2, multiplying the board's "
                   "published speed-up (default: none, the board's median; docs/threads.md)")
    e.add_argument("--core-emulation", choices=["pooled", "per-core", "projected", "auto"],
                   default="auto",
                   help="how a device of several cores gets its CPU: auto (default: projected "
                   "where the device has published multi-thread times at its nn speed, else "
                   "pooled), pooled (one quota for all, a lone thread may run faster than a "
                   "device core), per-core (a quota per core, threads spread over them) or "
                   "projected (one core, the workload told to start one thread, its times "
                   "divided by the board's published speed-up; docs/threads.md)")


def _quota_scale(text: str) -> Optional[float]:
    """'auto' -> None; else a number from 0.5 to 4."""
    if text.strip().lower() == "auto":
        return None
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number or 'auto'") from None
    if not 0.5 <= x <= 4:
        raise argparse.ArgumentTypeError(f"{text} is outside 0.5 to 4")
    return x


def _run_options(args: argparse.Namespace) -> dict:
    return dict(cpu_period_us=args.cpu_period_us, parent=args.parent,
                allow_missing_controllers=args.allow_missing,
                iteration_time=getattr(args, "iteration_time", None),
                keep_warm=args.keep_warm, speed_kind=args.speed_kind,
                thread_env=args.thread_env, core_emulation=args.core_emulation,
                core_scaling=args.core_scaling, quota_scale=args.quota_scale,
                drift_check=args.drift_check, workload_scaling=args.workload_scaling,
                count_activations=args.count_activations)


def _plan_options(args: argparse.Namespace) -> dict:
    """The options of _run_options that plan_emulation takes, without the drift probe (tens of
    seconds at some runtimes' speeds): a plan made before any run checks them."""
    options = _run_options(args)
    for run_only in ("parent", "allow_missing_controllers", "count_activations"):
        del options[run_only]
    options["drift_check"] = False
    return options


def _figure(d: edgeprof.Device, figure: str) -> str:
    src = d.sources.get(figure)
    if src is None:
        return f"specified in {d.origin}" if d.origin and d.origin != "catalog" else "not sourced"
    return f"{src.status}: {src.source}"


def _show_device(d: edgeprof.Device) -> None:
    watts = lambda w: f"{w:g} W" if w is not None else "unknown"  # noqa: E731
    bw = lambda b: f"{b / 1e6:g} MB/s" if b else "unknown"  # noqa: E731
    print(f"{d.name}" + (f" (also: {', '.join(d.aliases)})" if d.aliases else ""))
    print(f"  {d.description}" if d.description else "", end="\n" if d.description else "")
    print(f"  from: {d.origin or 'built in code'}")
    rows = [
        ("cores", f"{d.cores}", "cores"),
        ("core speed", d.speed_text, "core_speed"),
        ("memory", edgeprof.devices.format_size(d.memory_bytes), "memory"),
        ("cpu", ", ".join(x for x in (
            d.cpu.layout or " ".join(x for x in (d.cpu.model, f"@ {d.cpu.clock_mhz:g} MHz"
                                                 if d.cpu.clock_mhz else "") if x),
            d.cpu.soc, d.cpu.architecture) if x) or "unknown", "cpu"),
        ("storage", f"{d.storage or 'unknown'}, read {bw(d.io_read_bps)}, write "
                    f"{bw(d.io_write_bps)}", "storage"),
        ("power", f"idle {watts(d.power.idle_watts)}, loaded {watts(d.power.loaded_watts)}",
         "power"),
    ]
    if d.reference_speed is not None:
        rows.insert(2, ("reference speed", f"{d.reference_speed:g} of the reference core "
                        f"({edgeprof.speed.REFERENCE_CORE})", "reference_speed"))
    if d.nn_ms:
        nn = (str(d.nn).removeprefix("nn speed ") if d.nn is not None else
              f"not available here: {d.nn_missing}; run `edgeprof calibrate-host --nn`")
        rows.insert(2, ("nn speed", f"{nn}; published {d.nn_precision} times of "
                        f"{len(d.nn_ms)} graphs, one thread", "nn"))
    else:
        rows.insert(2, ("nn speed", "none: no published CNN inference times for this device; "
                        "emulated at the core speed above", "core_speed"))
    for runtime, times in d.runtime_ms.items():
        try:
            speed = str(d.for_runtime(runtime).nn)
        except edgeprof.Error as e:  # this host's rating with it is missing: say how to get it
            speed = f"not available here: {e}"
        rows.insert(3, (f"{runtime} speed", f"{speed}; published {times.precision} times of "
                        f"{len(times.ms)} models, {times.threads} thread"
                        f"{'' if times.threads == 1 else 's'}", "runtimes"))
    if d.swap_bytes:
        rows.append(("swap", edgeprof.devices.format_size(d.swap_bytes), "swap"))
    if d.speed_schedule:
        rows.append(("speed schedule", ", ".join(f"x{s.factor:g} from {s.after_s:g} s"
                                                 for s in d.speed_schedule), "speed_schedule"))
    for label, value, figure in rows:
        print(f"  {label:<15} {value}")
        print(f"  {'':<15}   {_figure(d, figure)}")


def cmd_devices(args: argparse.Namespace) -> int:
    words = list(args.what)
    if words and words[0] == "show":
        words.pop(0)
        if len(words) != 1:
            raise edgeprof.DeviceError("usage: edgeprof devices show NAME (a device name or the "
                                       "path of a device file)")
    if len(words) > 1:
        raise edgeprof.DeviceError(f"unexpected arguments {words[1:]}; usage: edgeprof devices "
                                   "[show NAME]")
    if words:
        if not words[0]:
            raise edgeprof.DeviceError("devices show '': an empty name; give a device's name or "
                                       "the path of a device file")
        d = edgeprof.find_device(words[0])
        if args.json:
            print(d.to_json(), end="")
        else:
            _show_device(d)
        return 0
    devices = list(edgeprof.devices.catalog_devices())
    user = edgeprof.devices.user_devices()
    devices += user.devices
    for problem in user.problems:  # on stderr, so that --json output stays parseable
        print(f"edgeprof: skipped {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps([json.loads(d.to_json()) for d in devices], indent=2))
        return 0
    print(f"{'name':<22} {'cores':>5} {'speed':>6} {'nn':>6} {'memory':>9} {'idle/load W':>12}  "
          f"description")
    for d in devices:
        w = (f"{d.power.idle_watts:g}/{d.power.loaded_watts:g}"
             if d.power.idle_watts is not None and d.power.loaded_watts is not None else "")
        mark = "" if d.origin == "catalog" else " [user]"
        nn = f"{d.nn.core_speed:.3f}" if d.nn is not None else ("?" if d.nn_ms else "-")
        print(f"{d.name:<22} {d.cores:>5} {d.core_speed:>6.3f} {nn:>6} "
              f"{edgeprof.devices.format_size(d.memory_bytes):>9} {w:>12}  {d.description}{mark}")
    rating = edgeprof.speed.cached_reference_rating()
    how = (f"the catalog's speeds relative to its reference core ({edgeprof.speed.REFERENCE_CORE}) "
           f"divided by this host's {rating.speed:.3f} of it ({rating.host_mips:.0f} MIPS by "
           "7-Zip)" if rating is not None else
           f"the catalog's speeds are relative to its reference core "
           f"({edgeprof.speed.REFERENCE_CORE}) and UNCORRECTED for this host: " +
           _not_cached(edgeprof.speed.why_not_cached_reference_rating(),
                       "run `edgeprof calibrate-host --reference` once",
                       "edgeprof calibrate-host --reference"))
    print(f"\nspeed: one device core relative to one core of this host; {how}. "
          "`edgeprof devices show NAME` gives every figure's source (docs/devices.md)")
    nn_rating = edgeprof.nn.cached_nn_rating()
    print("nn: the speed for CNN inference (ncnn's published one-thread times on the device / "
          "this host's), emulated by default where shown; " +
          (f"this host's from {len(nn_rating.host_ms)} graphs, measured {nn_rating.measured_at}"
           if nn_rating is not None else "'?': this host's nn rating is NOT measured: " +
           _not_cached(edgeprof.nn.why_not_cached_nn_rating(),
                       "run `edgeprof calibrate-host --nn` once",
                       "edgeprof calibrate-host --nn") + " (needs `pip install ncnn`)") +
          "; '-': none published (docs/fidelity.md)")
    paths = edgeprof.devices.device_search_path()
    print(f"your device files: {', '.join(paths) or '(none: set EDGEPROF_DEVICE_PATH)'}")
    return 0


def _reference_json(r: Optional["edgeprof.speed.ReferenceRating"]) -> Optional[dict]:
    if r is None:
        return None
    return {"host_mips": r.host_mips, "speed": r.speed,
            "reference_core": edgeprof.speed.REFERENCE_CORE,
            "reference_mips": edgeprof.speed.REFERENCE_CORE_MIPS, "command": r.command,
            "version": r.version, "cpu": r.cpu, "measured_at": r.measured_at,
            "cache_file": r.cache_file}


def _nn_json(r: Optional["edgeprof.nn.NnRating"]) -> Optional[dict]:
    if r is None:
        return None
    # The other runtimes' models (timm's and torchvision's classifiers) take 224 x 224 x 3.
    sizes = ({g.name: [g.width, g.height, g.channels] for g in edgeprof.nn.reference_graphs()}
             if r.runtime_id == "ncnn" else {name: [224, 224, 3] for name in r.host_ms})
    return {"host_ms": r.host_ms, "runtime_id": r.runtime_id, "runtime": r.runtime,
            "precision": r.precision,
            "graphs": [{"graph": name, "input": sizes.get(name), "precision": r.precision,
                        "ms": ms, "statistic": "median" if r.runtime_id == "ncnn" else "mean"}
                       for name, ms in r.host_ms.items()],
            "command": r.command, "cpu": r.cpu, "loops": r.loops,
            "measured_at": r.measured_at, "cache_file": r.cache_file}


def _share_json(q: Optional["edgeprof.speed.QuotaShare"]) -> Optional[dict]:
    if q is None:
        return None
    return {"points": [{"speed": p.speed, "share": p.share, "measured": p.measured,
                        "p10": p.p10, "p90": p.p90, "p25": p.p25, "p75": p.p75,
                        "samples": p.samples, "by_graph": dict(p.by_graph)}
                       for p in q.points],
            "period_us": q.period_us, "keep_warm": q.keep_warm, "graphs": list(q.graphs),
            "rounds": q.rounds, "cpu": q.cpu, "runtime_id": q.runtime_id,
            "measured_at": q.measured_at, "cache_file": q.cache_file}


def _ncnn() -> "edgeprof.nn.NnRuntime":
    return next(r for r in edgeprof.nn.nn_runtimes() if r.id == "ncnn")


def _not_cached(why: str, unmeasured: str, again: str) -> str:
    """What to say of a cache that gave nothing: ``unmeasured`` where nothing was measured yet,
    else why it is not used (the file and its problem: corrupt, another kernel) and ``again``,
    the command that measures it (once "not measured", where a file was there)."""
    if not why or "is not measured yet" in why:
        return unmeasured
    return f"{why} (`{again}`)"


def _runtime_note(r: "edgeprof.nn.NnRuntime") -> str:
    why = edgeprof.nn.why_not_cached_nn_rating(runtime=r.id)
    if why and "is not measured yet" not in why:
        return f"{why} (`edgeprof calibrate-host --nn --runtime {r.id} --python PYTHON`)"
    return (f"not measured on this host yet: `edgeprof calibrate-host --nn --runtime {r.id} "
            f"--python PYTHON` with the interpreter that has {r.name} (`{r.install}`): about a "
            f"minute for the rating, then {r.share_duration} for its own share under a "
            "quota")


def cmd_calibrate_host(args: argparse.Namespace) -> int:
    progress = None if args.json else (lambda line: print(f"edgeprof: {line}", file=sys.stderr))
    if args.runtime != "ncnn" and not args.nn:
        raise edgeprof.Error(f"--runtime {args.runtime} chooses the runtime --nn measures: add "
                             "--nn (without both, every cached rating is shown)")
    if args.python and not args.nn:
        raise edgeprof.Error("--python names the interpreter --nn measures a runtime with: add "
                             "--nn")
    # The other runtimes' ratings (PyTorch's) and own shares under a quota: measured when asked
    # for, else the cached ones.
    others = {}
    for r in (r for r in edgeprof.nn.nn_runtimes() if r.id != "ncnn"):
        if args.nn and args.runtime == r.id:
            rated = edgeprof.nn.measure_nn_rating(runtime=r.id, progress=progress,
                                                  python=args.python or "")
            try:
                r_share = edgeprof.speed.measure_quota_share(runtime=r.id, progress=progress,
                                                             python=args.python or "")
                r_share_note = r_share.note
            except edgeprof.Error as e:  # the rating stands; plans take ncnn's share, and say so
                r_share, r_share_note = None, f"not measured: {e}"
            others[r.id] = (r, rated, rated.note, r_share, r_share_note)
        else:
            rated = edgeprof.nn.cached_nn_rating(runtime=r.id)
            r_share = edgeprof.speed.cached_quota_share(runtime=r.id)
            others[r.id] = (r, rated, "" if rated is not None else _runtime_note(r), r_share,
                            "" if r_share is not None or rated is None else
                            _not_cached(edgeprof.speed.why_not_cached_quota_share(runtime=r.id),
                                        "", f"edgeprof calibrate-host --nn --runtime {r.id}") or
                            f"own share under a quota not measured: `edgeprof calibrate-host --nn "
                            f"--runtime {r.id}` measures it with the rating ("
                            f"{r.share_duration} on a 2-vCPU host); until then plans at "
                            "its speed take ncnn's")
    if args.nn and args.runtime == "ncnn":
        nn = edgeprof.nn.measure_nn_rating(progress=progress, python=args.python or "")
        nn_note = nn.note
        try:
            share = edgeprof.speed.measure_quota_share(progress=progress, python=args.python or "")
            share_note = share.note
        except edgeprof.Error as e:  # the rating stands; plans say the share is missing
            share = None
            share_note = f"not measured: {e}"
    else:
        nn = edgeprof.nn.cached_nn_rating()
        nn_note = "" if nn is not None else _not_cached(
            edgeprof.nn.why_not_cached_nn_rating(),
            "not measured on this host yet: `edgeprof calibrate-host --nn` (ncnn, about a "
            "minute), or the first run of a catalog device with published CNN inference times "
            "measures it (docs/devices.md)", "edgeprof calibrate-host --nn")
        share = edgeprof.speed.cached_quota_share()
        share_note = "" if share is not None else _not_cached(
            edgeprof.speed.why_not_cached_quota_share(),
            "not measured on this host yet: `edgeprof calibrate-host --nn` ("
            f"{_ncnn().share_duration} more), "
            "or the first run of a device at its nn speed measures it (docs/fidelity.md)",
            "edgeprof calibrate-host --nn")
    if args.reference:
        rating = edgeprof.speed.measure_reference_rating(progress=progress)
        note = rating.note
    else:
        rating = edgeprof.speed.cached_reference_rating()
        note = "" if rating is not None else _not_cached(
            edgeprof.speed.why_not_cached_reference_rating(),
            "not measured on this host yet: `edgeprof calibrate-host --reference` (7-Zip, "
            "40-60 s); until then catalog speeds are used uncorrected",
            "edgeprof calibrate-host --reference")
    cal = edgeprof.speed.host_calibration(remeasure=args.remeasure)
    s = cal.scores
    if args.json:
        print(json.dumps({"suite": s.suite, "integer": s.integer, "floating": s.floating,
                          "memory": s.memory, "vector": s.vector, "vector_unit": s.vector_unit,
                          "vector_kernel": s.vector_kernel,
                          "cpu_model": cal.cpu_model, "kernel": cal.kernel,
                          "measured_at": cal.measured_at, "from_cache": cal.from_cache,
                          "cache_file": cal.cache_file,
                          "reference": _reference_json(rating), "nn": _nn_json(nn),
                          "runtimes": {k: _nn_json(v[1]) for k, v in others.items()},
                          "quota_share": _share_json(share),
                          "runtime_quota_shares": {k: _share_json(v[3])
                                                   for k, v in others.items()}},
                         indent=2))
        return 0
    how = "cached" if cal.from_cache else "measured now"
    print(f"host per-core scores ({s.suite}, {how}, measured {cal.measured_at}):")
    print(f"  integer {s.integer:.4g}   floating point {s.floating:.4g}   memory {s.memory:.4g}")
    print(f"  vector {s.vector:.4g} GFLOP/s ({s.vector_unit}, {s.vector_kernel}): the nn speed of "
          "devices probed by edgeprof-probe")
    print(f"  cpu {cal.cpu_model}, kernel {cal.kernel}")
    print(f"  cache: {cal.cache_file or '(not written)'}")
    if cal.note:
        print(f"  note: {cal.note}")
    print(f"against the catalog's reference core ({edgeprof.speed.REFERENCE_CORE}, "
          f"{edgeprof.speed.REFERENCE_CORE_MIPS:.0f} MIPS):")
    if rating is not None:
        print(f"  {rating}")
        print(f"  catalog speeds are divided by {rating.speed:.3f} on this host")
        print(f"  measured by: {rating.command} on CPU {rating.cpu} ({rating.version})")
        print(f"  cache: {rating.cache_file or '(not written)'}")
    if note:
        print(f"  note: {note}")
    print("CNN inference (nn), the reference graphs with ncnn, one thread:")
    if nn is not None:
        print(f"  {nn}")
        print(f"  cache: {nn.cache_file or '(not written)'}")
    if nn_note:
        print(f"  note: {nn_note}")
    print("the emulation's own share under a CPU quota (ncnn, one thread; the quota scale of "
          "nn speeds):")
    if share is not None:
        print(f"  {share}")
        print(f"  cache: {share.cache_file or '(not written)'}")
    if share_note:
        print(f"  note: {share_note}")
    for r, rated, why, r_share, r_share_note in others.values():
        # "PyTorch (fp32)", but "PyTorch int8": a precision of a runtime says it in its name.
        label = r.name if r.precision_of else f"{r.name} ({r.precision})"
        print(f"{label}, its {len(r.models)} models with random weights, one thread:")
        if rated is not None:
            print(f"  {rated}")
            print(f"  cache: {rated.cache_file or '(not written)'}")
        if why:
            print(f"  note: {why}")
        if r_share is not None:
            print(f"  {r_share}")
            print(f"  cache: {r_share.cache_file or '(not written)'}")
        if r_share_note:
            print(f"  note: {r_share_note}")
    return 0


def _interval(text: str) -> Optional[float]:
    """'10ms', '1 ms', '0.5s', '2' (seconds) or 'off' -> seconds (None = no sampling)."""
    t = text.strip().lower()
    if t in ("off", "none", "0"):
        return None
    try:
        if t.endswith("ms"):
            seconds = float(t[:-2]) / 1e3
        elif t.endswith("us"):
            seconds = float(t[:-2]) / 1e6
        else:
            seconds = float(t[:-1] if t.endswith("s") else t)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise argparse.ArgumentTypeError(
            f"invalid interval {text!r}: give e.g. 10ms, 0.5s, 2 (seconds) or off")
    return seconds or None  # 0s, 0ms: off, as "0"


def _iteration_time(text: str) -> float:
    """A positive time, as _interval reads it. Not 0 or 'off': an interval's "no sampling" is
    None, which here means not given (the period then --cpu-period-us's), and ran silently."""
    try:
        seconds = _interval(text)
    except argparse.ArgumentTypeError:
        seconds = None
    if seconds is None:
        raise argparse.ArgumentTypeError(
            f"invalid iteration time {text!r}: give the workload's typical iteration on the "
            "device, a positive time (e.g. 20ms, 0.5s, 2 for seconds), or leave the option out "
            "(the period is then --cpu-period-us's)")
    return seconds


def _timeout(text: str) -> float:
    """Positive seconds (60, 60s, 500ms, as --interval reads a time), or inf (no limit):
    checked as the options are read, before a command prints anything (demo's header came
    before the run that refused it). `60s` was refused, though --interval takes it."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = _interval(text) or math.nan
        except argparse.ArgumentTypeError:
            seconds = math.nan
    if not seconds > 0:
        raise argparse.ArgumentTypeError(
            f"invalid timeout {text!r}: give a positive time (e.g. 60, 60s or 500ms; a bare "
            "number is seconds), or inf for no limit")
    return seconds


def _given(text: str) -> str:
    if text == "":
        raise argparse.ArgumentTypeError("an empty value (''): give one, or leave the option out")
    return text


def _whole(text: str) -> int:
    """A whole number from 0 to 2^31-1 (counts, microseconds): what the library takes."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 2**31 - 1:
        raise argparse.ArgumentTypeError(
            f"invalid number {text!r}: give a whole number from 0 to {2**31 - 1}")
    return value


def _count(text: str) -> int:
    """A whole number from 1 (cores, threads, runs): 0 passed _whole and was refused later by
    the library under its own field name, or taken as "not given"."""
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}: give a whole number of at "
                                         "least 1")
    return value


def _fraction(text: str) -> float:
    """A number between 0 and 1, exclusive (--alpha, --confidence): 95 for 0.95 was refused by
    the library as "confidence" (not the option typed)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        try:
            percent = float(text.strip().rstrip("%"))
        except ValueError:
            percent = math.nan
        hint = f" ({percent / 100:g}, not {text.strip()}?)" if 1 <= percent < 100 else ""
        raise argparse.ArgumentTypeError(f"invalid fraction {text!r}: give a number between 0 "
                                         f"and 1, e.g. 0.95{hint}")
    return value


def _non_negative(text: str) -> float:
    """A finite number of 0 or more (--ridge)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}: give 0 or a positive "
                                         "number")
    return value


def _speed_kind(text: str) -> str:
    """automatic, nn or integer; 'auto' is automatic, as --core-emulation and --quota-scale
    spell it."""
    kind = text.strip().lower()
    kind = "automatic" if kind == "auto" else kind
    if kind not in ("automatic", "nn", "integer"):
        raise argparse.ArgumentTypeError(f"invalid speed kind {text!r}: give automatic (auto), "
                                         "nn or integer")
    return kind


def _not_a_directory(path: str, label: str, what: str) -> None:
    """Refuses a directory given for the file `label` names ("--file /tmp"): _files calls it
    "not a regular file" and asks for "the file edgeprof wrote", which a workload list is not."""
    if os.path.isdir(path):
        raise edgeprof.Error(f"{label} is a directory: give {what}")


def _read_text(path: str, label: str, what: str) -> str:
    _not_a_directory(path, label, what)
    return _files.read_text(path)


def _report_schema(text: str, path: str) -> str | None:
    """The schema a JSON report names (None for another JSON object); an edgeprof.Error for
    text that is not JSON (a truncated or foreign file)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        why = e if isinstance(e, ValueError) else "nested too deeply"
        raise edgeprof.Error(f"{path} is not a complete JSON report ({why}): give the file "
                             "`edgeprof run --json` wrote, whole") from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema == "edgeprof.comparison":
        raise edgeprof.Error(f"{path} is a comparison (`edgeprof compare --json`), not a run's "
                             "report: read it as JSON, or give a file `edgeprof run --json` "
                             "wrote")
    return schema


def _check_outputs(outputs: dict[str, Optional[str]],
                   inputs: dict[str, Optional[str]] | None = None) -> None:
    """Before any run: the files a command will write can be written, no two are one file,
    none is a file it reads (`inputs`, by option, or "input" for an argument), and at most one
    is stdout ('-'). A run's report that could not be written was lost after the run (and its
    exit code with it)."""
    given = {option: path for option, path in outputs.items() if path}
    # /dev/stdout is stdout too (written to the descriptor itself, as '-').
    on_stdout = [option for option, path in given.items()
                 if path == "-" or _files._descriptor(path) == 1]
    if len(on_stdout) > 1:
        raise edgeprof.Error(f"{' and '.join(on_stdout)} both write to stdout ('-'): give one "
                             "of them a file")
    seen: dict[str, str] = {os.path.realpath(p): f"{option} {p}"
                            for option, p in (inputs or {}).items() if p}
    for option, path in given.items():
        if path == "-" or _files._descriptor(path) is not None:
            continue
        real = os.path.realpath(path)
        # /dev/null and other files that are not regular may be given twice.
        regular = not os.path.exists(real) or os.path.isfile(real)
        if regular and real in seen:
            raise edgeprof.Error(f"{option} {path} is the same file as {seen[real]}: give "
                                 "another file")
        seen[real] = f"{option} {path}"
        folder = os.path.dirname(real)
        if os.path.isdir(real):
            raise edgeprof.Error(f"{option} {path} is a directory: give a file name")
        if not os.path.isdir(folder):
            raise edgeprof.Error(f"{option} {path}: the directory {folder} does not exist")
        if not os.access(real if os.path.exists(real) else folder, os.W_OK):
            raise edgeprof.Error(f"{option} {path} cannot be written (permission denied)")


def _device_files(names: "str | list[str] | None") -> dict[str, str]:
    """The --device values that name files, as inputs of _check_outputs: `run --device b.json
    --json b.json` overwrote the device file with a report."""
    names = [names] if isinstance(names, str) else names or []
    return {f"--device {i + 1}" if len(names) > 1 else "--device": n
            for i, n in enumerate(names) if os.path.isfile(n)}


def _load_report(path: str) -> "edgeprof.Result | edgeprof.RepeatedResult":
    """A run's or repeated runs' report, or an edgeprof.Error that names the file."""
    text = _read_text(path, path, "a JSON report's file (edgeprof run --json FILE)")
    kind = _report_schema(text, path)
    try:
        return (edgeprof.RepeatedResult if kind == "edgeprof.repeated" else edgeprof.Result) \
            .from_json(text)
    except edgeprof.Error as e:
        raise edgeprof.Error(f"{path}: {e}") from None


def _write(path: str, text: str) -> None:
    """Writes a report file, or stdout for '-'."""
    if path == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    _files.write_text(path, text)  # a report overwritten is whole or not at all


def cmd_run(args: argparse.Namespace) -> int:
    separated = args.command[:1] == ["--"]
    command = args.command[1:] if separated else args.command
    if not command:
        raise edgeprof.Error("no command given: edgeprof run [options] -- COMMAND [ARGS...]")
    if (not separated and args.json not in (None, "-") and not os.path.exists(args.json)
            and shutil.which(args.json) and not shutil.which(command[0])
            and not os.access(command[0], os.X_OK)):
        # `run --json python3 infer.py` took python3 for the report's file and ran infer.py.
        raise edgeprof.Error(f"--json {args.json}: is {args.json} the command? write "
                             f"`--json -- {args.json} ...` (the report on stdout) or `--json "
                             f"FILE -- {args.json} ...`")
    # As bytes: an argument that is not UTF-8 (Python holds it with surrogate escapes) reaches
    # the workload as the bytes it was given.
    command = [os.fsencode(a) for a in command]
    if args.repeat < 1 or args.warmup < 0:
        raise edgeprof.Error("--repeat must be at least 1 and --warmup 0 or more")
    _check_outputs({"--json": args.json, "--csv": args.csv}, _device_files(args.device))
    report_to_stdout = args.json == "-" or args.csv == "-"
    repeated = args.repeat > 1 or args.warmup > 0

    said = [True]  # stderr took the lines so far (on a full disk: the runs go on unsaid)

    def progress(index: int, total: int, warmup: bool, r: edgeprof.Result) -> None:
        what = "warm-up" if warmup else f"run {index - args.warmup + 1}/{args.repeat}"
        outcome = "ok" if r.ok else "FAILED"
        if said[0]:
            said[0] = _said(f"edgeprof: [{index + 1}/{total}] {what}: {r.wall_time_s:.3f} s, "
                            f"{outcome}")

    result = edgeprof.run(
        command, device=_device(args), timeout=args.timeout, interval=args.interval,
        isolate_network=args.isolate_network, repeat=args.repeat, warmup=args.warmup,
        progress=progress if repeated else None,
        # With the JSON or CSV on stdout, stdout carries only it: the workload's goes to stderr.
        stdout=sys.stderr.fileno() if report_to_stdout else None,
        **_run_options(args))
    runs = result.runs if repeated else [result]
    if args.json:
        _write(args.json, result.to_json())
    if args.csv:
        _write(args.csv, result.to_csv())
    # The summary on stderr whatever went to stdout (with the JSON there it went nowhere, and
    # its warnings, an OOM kill or throttling with it).
    if repeated:
        print(str(runs[-1]), end="", file=sys.stderr)
        print(f"\n{result}", end="", file=sys.stderr)
    else:
        print(str(result), end="", file=sys.stderr)
    for r in runs:
        if not r.ok:
            return _exit_status(r)
    return _exit_status(runs[-1])


def cmd_show(args: argparse.Namespace) -> int:
    _check_outputs({"--csv": args.csv}, {"input": args.file})
    report = _load_report(args.file)
    if args.csv:
        _write(args.csv, report.to_csv())
    # With the CSV on stdout, stdout carries only the CSV (as `run` does).
    print(str(report), end="", file=sys.stderr if args.csv == "-" else sys.stdout)
    return 0


def _workloads(args: argparse.Namespace) -> list[tuple[str, str]]:
    """-w NAME=COMMAND options and --file lines ("NAME: COMMAND" or "NAME=COMMAND")."""
    specs = [(spec, "=") for spec in args.workload or []]
    if args.file:
        for line in _read_text(args.file, f"--file {args.file}", "a file of workloads, one "
                               "'NAME: COMMAND' per line").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                specs.append((line, "=:"))
    out = []
    for spec, separators in specs:
        # -w NAME=COMMAND at its first '=' (a name may hold ':', "mobilenet:v2"); a file's
        # line at its first '=' or ':'.
        sep = min((i for i in (spec.find(c) for c in separators) if i > 0), default=-1)
        if sep <= 0 or not spec[sep + 1:].strip():
            raise edgeprof.Error(f"workload {spec!r}: write NAME=COMMAND (or NAME: COMMAND in a "
                                 "file)")
        name, command = spec[:sep].strip(), spec[sep + 1:].strip()
        try:
            shlex.split(command)
        except ValueError as e:
            raise edgeprof.Error(f"workload {name!r}: its command {command!r} cannot be split "
                                 f"into words ({e}): close its quotes or escape them") from None
        out.append((name, command))
    if len(out) < 1:
        raise edgeprof.Error(f"no workloads in {args.file}: it holds only comments or blank lines"
                             if args.file else
                             "no workloads: give -w NAME=COMMAND (several times) or --file FILE")
    return out


def cmd_calibrate_speed(args: argparse.Namespace) -> int:
    _check_outputs({"--save": args.save, "--json": args.json}, {"--file": args.file})
    # --save may write the calibrated device over its own file; the report may not.
    _check_outputs({"--json": args.json}, _device_files(args.device))
    if (args.cores is not None or args.memory is not None) and args.speed is None \
            and args.reference_speed is None:
        if args.device is None and (args.cores is None or args.memory is None):
            raise edgeprof.DeviceError("a custom device needs --cores and --memory (its speed "
                                       "is what the calibration finds)")
        # The core speed is what the calibration finds: a custom device needs none (it was
        # required, then replaced by the speeds tried).
        args.speed = 1.0
    workloads = _workloads(args)
    measured: dict[str, float] = {}
    for spec in args.measured or []:
        name, sep, value = spec.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = float("nan")
        if not sep or not name.strip() or not 0 < seconds < float("inf"):
            raise edgeprof.Error(f"--measured {spec!r}: write NAME=VALUE, the positive figure "
                                 "(seconds of wall time by default) measured on the device")
        if name.strip() in measured:
            raise edgeprof.Error(f"--measured {name.strip()!r} given twice "
                                 f"({measured[name.strip()]:g} and {seconds:g}): give each "
                                 "workload's figure once")
        measured[name.strip()] = seconds
    names = [n for n, _ in workloads]
    missing = [n for n in names if n not in measured]
    extra = [n for n in measured if n not in names]
    if missing or extra:
        raise edgeprof.Error(
            "every workload needs its device figure and every figure a workload: "
            + "; ".join(filter(None, [
                f"no --measured for {', '.join(missing)}" if missing else "",
                f"--measured for unknown workload {', '.join(extra)}" if extra else ""])))
    periods = []
    for text in (args.periods_ms or "").split(","):
        if text.strip():
            try:
                ms = float(text)
            except ValueError:
                ms = float("nan")
            # The kernel's 1 to 1000 ms; 0 (the plan's period) only as written, not rounded to.
            if not (ms == 0 or 1 <= ms <= 1000):
                raise edgeprof.Error(f"--periods-ms: {text.strip()!r} is not a CFS period: give "
                                     "milliseconds from 1 to 1000 (0: the plan's own)")
            periods.append(round(ms * 1000))

    def progress(done: int, planned: int, name: str, speed: float, period_us: int) -> None:
        if not args.quiet:
            print(f"edgeprof: [{done}/{planned}] {name} at core speed {speed:.4f}, period "
                  f"{period_us / 1000:g} ms", file=sys.stderr, flush=True)

    # The calibration runs at the speeds it measures at: no count of activations sets another.
    if args.count_activations:
        raise edgeprof.Error("--count-activations: calibrate-speed runs each workload at the "
                             "speeds it measures at, which a count would change; leave it out")
    options = _run_options(args)
    del options["count_activations"]
    cal = edgeprof.speed.calibrate_speed(
        _device(args), [(n, [os.fsencode(a) for a in shlex.split(c)], measured[n])
                         for n, c in workloads],
        figure=args.figure, repeat=args.repeat, periods_us=periods, timeout=args.timeout,
        progress=progress, **options)
    if args.save:
        _write(args.save, cal.device.to_json())
    if args.json:
        _write(args.json, json.dumps({
            "core_speed": cal.core_speed, "period_us": cal.period_us, "chosen": cal.chosen,
            "rms_residual": cal.rms_residual, "max_abs_residual": cal.max_abs_residual,
            "provenance": "measured", "notes": list(cal.notes),
            "periods": [{"period_us": p.period_us, "core_speed": p.core_speed,
                         "rms_residual": p.rms_residual,
                         "workloads": [{"name": w.name, "device_value": w.device_value,
                                        "emulated": w.emulated, "residual": w.residual,
                                        "a": w.model.a, "b": w.model.b,
                                        "points": [list(pt) for pt in w.points],
                                        "speed_sensitive": w.speed_sensitive}
                                       for w in p.workloads]}
                        for p in cal.periods],
            "device": json.loads(cal.device.to_json())}, indent=2))
    if args.json != "-":
        # With the device on stdout (--save -), stdout carries it alone.
        out = sys.stderr if args.save == "-" else sys.stdout
        print(str(cal), end="", file=out)
        if args.save and args.save != "-":
            print(f"saved the calibrated device to {args.save}")
    if args.save and (args.periods_ms or args.cpu_period_us or args.iteration_time):
        # A device file has no period: runs of it take the plan's unless told (a period given
        # by --cpu-period-us or --iteration-time was not said either).
        print(f"edgeprof: the speed is calibrated at a {cal.period_us / 1000:g} ms period: run "
              f"the saved device with --cpu-period-us {cal.period_us} to emulate it as "
              "calibrated", file=sys.stderr)
    return 0


# What compare projects with --calibrations and no --target.
_DEFAULT_TARGET = "device_wall_time_s"


def _load_calibrations(path: str) -> list["edgeprof.analysis.Calibration"]:
    _not_a_directory(path, f"--calibrations {path}", "the calibration file `edgeprof fit -o` "
                     "wrote")
    return edgeprof.analysis.load_calibrations(path)


def _projected_target(args: argparse.Namespace,
                      calibrations: list["edgeprof.analysis.Calibration"]) -> str:
    """compare's --target: one the calibrations have (another gave n/a in every row)."""
    if not args.calibrations:
        if args.target:
            raise edgeprof.Error(f"--target {args.target} is the calibrated figure to project: "
                                 "add --calibrations FILE (`edgeprof fit -o FILE`), or leave "
                                 "--target out")
        return ""
    target = args.target or _DEFAULT_TARGET
    targets = sorted({c.projection.target for c in calibrations})
    if target not in targets:
        given = f"--target {target}" if args.target else f"the default --target, {target}"
        raise edgeprof.Error(f"--calibrations {args.calibrations} has no calibration of "
                             f"{given}; its targets: {', '.join(targets) or 'none'}: give one "
                             "of them with --target")
    return target


def cmd_compare(args: argparse.Namespace) -> int:
    _check_outputs({"--json": args.json},
                   {"--calibrations": args.calibrations, "--file": args.file,
                    **_device_files(args.device)})
    calibrations = _load_calibrations(args.calibrations) if args.calibrations else []
    target = _projected_target(args, calibrations)
    devices = args.device or ["raspberry-pi-4"]
    comparison = edgeprof.compare(
        _workloads(args),
        # "at most N cores of each device": a smaller board is the use, not a slip.
        [_for_threads(_for_runtime(edgeprof.find_device(d), args), args.threads, warn=False)
         for d in devices],
        repeat=args.repeat,
        warmup=args.warmup, metric=args.metric, test=args.test, alpha=args.alpha,
        calibrations=calibrations, projected_target=target,
        interval=args.interval, timeout=args.timeout, progress=not args.quiet,
        **_run_options(args))
    if args.json:
        def number(v: float) -> float | None:  # JSON has no NaN (a failed row's): null
            return v if v == v and abs(v) != float("inf") else None

        rows = [{"device": r.device, "workload": r.workload, "rank": r.rank or None,
                 "tied": r.tied,
                 "pareto": r.pareto, "metric": comparison.metric, "value": number(r.value),
                 "value_provenance": _provenance(r, comparison.metric),
                 "memory_metric": comparison.memory_metric, "memory": number(r.memory),
                 "memory_provenance": _provenance(r, comparison.memory_metric),
                 "projected": None if r.projected is None else {
                     "target": comparison.projected_target, "estimate": r.projected.estimate,
                     "low": r.projected.low, "high": r.projected.high,
                     "confidence": r.projected.confidence, "provenance": "projected"},
                 "result": json.loads(r.result.to_json())} for r in comparison.rows]
        # 2: "rank" is null for a workload not ranked (it was the last rank, 1 where none ran).
        _write(args.json, json.dumps({"schema": "edgeprof.comparison", "schema_version": 2,
                                      "rows": rows}))
    if args.json != "-":
        print(str(comparison), end="")
    return 0 if all(r.result.ok for r in comparison.rows) else 1


def _read_csv(path: str, used: list[str]) -> list[tuple[int, dict[str, str]]]:
    """The CSV's rows as dicts, each with its line in the file (the header's is 1; blank lines,
    which DictReader skips, counted); refused where a column in `used` is named twice (a row
    would keep the last such column alone)."""
    import csv
    import io
    _not_a_directory(path, path, "the CSV file of your measurements")
    text = _files.read_text(path, newline="")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = [(reader.line_num, row) for row in reader]
        names = reader.fieldnames or []
        header = len(names)
    except csv.Error as e:
        raise edgeprof.Error(f"{path} is not a CSV file edgeprof can read: {e}") from None
    twice = sorted({n for n in used if names.count(n) > 1})
    if twice:
        raise edgeprof.Error(f"{path}: the header names {', '.join(map(repr, twice))} more than "
                             "once; give every column its own name")
    for line, row in rows:
        # DictReader fills a short row with None and keeps a long row's rest under None.
        extra = row.get(None) or []
        if extra or None in row.values():
            values = sum(v is not None for k, v in row.items() if k is not None) + len(extra)
            raise edgeprof.Error(f"{path}, line {line}: {values} values where the header names "
                                 f"{header} columns; give every row one value per column")
    return rows


def _csv_number(path: str, line: int, column: str, text: str, device: bool) -> float:
    """A cell of fit's CSV as a number, or an edgeprof.Error naming its line and column (the
    fit's own messages count points from 0, with no line). The fit's rules are checked here
    for that: a device figure is positive, a figure edgeprof measured never negative."""
    where = f"{path}, line {line}, column {column}"
    if not text.strip():
        raise edgeprof.Error(f"{where} is empty: give every row a number in each --x and --y "
                             "column, or remove the row")
    try:
        value = float(text)
    except ValueError:
        raise edgeprof.Error(f"{where}: {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise edgeprof.Error(f"{where}: {text.strip()} is not a finite number: give the figure "
                             "measured, or remove the row")
    if device and value <= 0:
        raise edgeprof.Error(f"{where} is {value:g}: a device figure (--y), a time or a size, "
                             "is positive: give the figure measured, or remove the row")
    if not device and value < 0:
        raise edgeprof.Error(f"{where} is {value:g}: a figure edgeprof measured (--x) is never "
                             "negative: give the figure measured, or remove the row")
    return value


def _device_name(text: str) -> str:
    """The name runs record for the device `text` names (an alias or a device file resolves to
    it), so that calibrations saved under it are found; `text` itself for an unknown device."""
    try:
        return edgeprof.find_device(text).name
    except edgeprof.DeviceError:
        return text


def _fit_device(args: argparse.Namespace, rows: list) -> str:
    """The device a fit is for: --device (an alias or a file resolved to the name runs record),
    else the CSV's `device` column (`edgeprof figures` writes it). Rows of several devices, or
    a --device the column contradicts, are refused: a typo or another board was saved without
    a word, and project then never found the calibration, or applied another board's fit."""
    column = sorted({r.get("device") or "" for _, r in rows} - {""})
    if len(column) > 1:
        raise edgeprof.Error(f"{args.csv}: its rows are of the devices {', '.join(column)}, "
                             "each of which needs its own fit: give the rows of one")
    column = [_device_name(c) for c in column]  # a hand-written alias, as --device's
    if args.device is None:
        if not column:
            raise edgeprof.Error(f"{args.csv} has no device column: give --device, the device "
                                 "its runs emulated (edgeprof devices)")
        return column[0]
    # A name find_device does not know is kept: runs record "custom", "<device>-1-thread" and
    # the names of devices made in Python, and project and compare look calibrations up by it.
    device = _device_name(args.device)
    if column and column[0] != device:
        raise edgeprof.Error(f"--device {args.device} is {device}, but {args.csv}'s device "
                             f"column says {column[0]}: give the device its runs emulated, or "
                             "leave --device out")
    if device == args.device and not column and device != "custom" and "-thread" not in device:
        try:
            edgeprof.find_device(args.device)
        except edgeprof.DeviceError:
            print(f"edgeprof: warning: --device {args.device} is not a device edgeprof knows "
                  "(edgeprof devices): the calibration is saved under that name, and only a "
                  "run that recorded it finds it", file=sys.stderr)
    return device


def _fit_core_emulation(args: argparse.Namespace, rows: list) -> str:
    """The core emulation a fit is for: --core-emulation, else the CSV's `core_emulation`
    column (`edgeprof figures` writes it), which a fit took no notice of: its calibration
    recorded none, and project applied it to runs of any core emulation (a pooled run
    projected by a projected run's fit is off by the board's speed-up). Rows of several are
    refused; so is a column that disagrees with --core-emulation."""
    column = sorted({r.get("core_emulation") or "" for _, r in rows} - {""})
    if len(column) > 1:
        raise edgeprof.Error(f"{args.csv}: its rows are of the core emulations "
                             f"{', '.join(column)}, each of which needs its own fit: give the "
                             "rows of one (edgeprof figures of that core emulation's reports)")
    if args.core_emulation:
        if column and column[0] != args.core_emulation:
            raise edgeprof.Error(f"--core-emulation {args.core_emulation}, but {args.csv}'s "
                                 f"core_emulation column says {column[0]}: give the rows of "
                                 f"{args.core_emulation} runs, or leave the option out")
        return args.core_emulation
    return column[0] if column else ""


def cmd_fit(args: argparse.Namespace) -> int:
    if args.output == "-":
        raise edgeprof.Error("--output -: calibrations are saved to a file (kept with those it "
                             "holds for other devices); --json prints this one on stdout")
    twice = sorted({c for c in args.x if args.x.count(c) > 1})
    if twice:
        raise edgeprof.Error(f"--x {', '.join(twice)} given more than once: give each feature "
                             "once")
    if args.y in args.x:
        raise edgeprof.Error(f"--y {args.y} is also an --x: --y names the column measured on "
                             "the device, --x the columns edgeprof measured")
    _check_outputs({"--output": args.output}, {"input": args.csv})
    rows = _read_csv(args.csv, args.x + [args.y])
    if not rows:
        raise edgeprof.Error(f"{args.csv} has no data rows")
    missing = [c for c in args.x + [args.y] if c not in rows[0][1]]
    if missing:
        raise edgeprof.Error(f"{args.csv} has no column {', '.join(missing)}; its columns: "
                             f"{', '.join(rows[0][1])}")
    for c in args.x:  # project() reads each from a run's figures: another could never be used
        edgeprof.results.check_figure_name(c, "--x")
    device = _fit_device(args, rows)
    core_emulation = _fit_core_emulation(args, rows)
    x = [[_csv_number(args.csv, line, c, r[c], device=False) for c in args.x] for line, r in rows]
    y = [_csv_number(args.csv, line, args.y, r[args.y], device=True) for line, r in rows]
    fit = edgeprof.analysis.Projection.fit(x, y, model=args.model, ridge=args.ridge,
                                           features=args.x, target=args.y)
    calibration = edgeprof.analysis.Calibration(device, fit, family=args.family or "",
                                                core_emulation=core_emulation)
    kept = []
    if args.output and os.path.exists(args.output):
        # The same device by any of its names, as project and compare find it: an entry saved
        # under an alias (from Python, or an older fit) stayed, and they went on finding it.
        # One without a core emulation (fitted before fit recorded it) is replaced by one with:
        # find_calibration takes an unlabelled one before one of another core emulation, so
        # the stale fit went on being applied to runs of other core emulations.
        def same(c: "edgeprof.analysis.Calibration") -> bool:
            replaced = (c.core_emulation == calibration.core_emulation or
                        (calibration.core_emulation != "" and c.core_emulation == ""))
            return ((c.family, c.projection.target) == (args.family or "", args.y) and replaced
                    and edgeprof.analysis.find_calibration([c], device, args.y, c.family,
                                                           c.core_emulation) is not None)

        loaded = edgeprof.analysis.load_calibrations(args.output)
        kept = [c for c in loaded if not same(c)]
        if calibration.core_emulation and any(same(c) and not c.core_emulation for c in loaded):
            print(f"edgeprof: replaced {args.output}'s calibration of {device} for {args.y} "
                  "that recorded no core emulation", file=sys.stderr)
    if args.output:
        edgeprof.analysis.save_calibrations(args.output, kept + [calibration])
    if args.json:
        print(edgeprof.analysis.calibrations_to_json([calibration]))
    else:
        print(str(fit), end="")
        if args.output:
            print(f"saved to {args.output} for device {device}"
                  + (f", family {args.family}" if args.family else ""))
    return 0


# What `figures` writes by default: the times a calibration is fitted on, and memory.
DEFAULT_FIGURES = ["wall_time_s", "all_cores_wall_time_s", "cpu_user_s", "peak_memory_bytes"]


def cmd_figures(args: argparse.Namespace) -> int:
    """Saved reports as one CSV row each (a repeated report's medians): the --x columns of
    `edgeprof fit` once a column of the device's own figures is added."""
    import csv
    import io
    names = args.figure or DEFAULT_FIGURES
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise edgeprof.Error(f"--figure {', '.join(twice)} given more than once: give each "
                             "figure once")
    for name in names:  # a typo fails before any file is read
        edgeprof.results.check_figure_name(name, "--figure")
    _check_outputs({"--csv": args.csv}, {f"report {i + 1}": path
                                         for i, path in enumerate(args.reports)})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["report", "device", "core_emulation", "runs"] + names)
    seen: dict[str, str] = {}  # (device, core emulation) -> the first report of it
    for path in args.reports:
        report = _load_report(path)
        repeated = isinstance(report, edgeprof.RepeatedResult)
        runs = list(report.runs) if repeated else [report]
        failed = sum(1 for r in runs if not r.ok)
        if failed:
            # Its figures would measure the failure (the time to a crash or a kill).
            raise edgeprof.Error(f"{path}: {failed} of its {len(runs)} run(s) failed; its "
                                 "figures measure the failure, not the workload: run it again")
        # The path as given, its bytes that are not UTF-8 escaped (the CSV is UTF-8).
        emulated = runs[0].plan.core_emulation
        seen.setdefault(f"{runs[0].device.name} ({emulated})", path)
        row: list[object] = [os.fsencode(path).decode("utf-8", "backslashreplace"),
                             runs[0].device.name, emulated, len(runs)]
        for name in names:
            try:
                if repeated and name not in report.stats:
                    raise edgeprof.Error(
                        f"no figure {name} in every one of its runs (those all have "
                        f"{', '.join(sorted(report.stats))}); leave --figure {name} out, or run "
                        "it again where the figure is measured")
                value = (report.stat(name).median if repeated
                         else edgeprof.results.figure(report, name))
                if not math.isfinite(value):
                    raise edgeprof.Error(f"its {name} is {value}: the report does not have it; "
                                         "leave it out, or run it again")
            except edgeprof.Error as e:
                if not args.figure:  # a default one the run lacks (memory.peak before 5.19)
                    row.append("")
                    continue
                raise edgeprof.Error(f"{path}: {e}") from None
            row.append(repr(value))
        writer.writerow(row)
    _write(args.csv, out.getvalue())
    if len(seen) > 1:
        # One calibration is fitted per device and core emulation (`fit --device D
        # --core-emulation E`): rows of several mixed into one fit would be wrong for each.
        print("edgeprof: warning: the reports are of several devices or core emulations: "
              f"{'; '.join(f'{k}, e.g. {v}' for k, v in seen.items())}; fit each apart "
              "(`edgeprof figures` of one device's and core emulation's reports, then "
              "`edgeprof fit`)", file=sys.stderr)
    return 0


def cmd_project(args: argparse.Namespace) -> int:
    report = _load_report(args.report)
    runs = report.runs if isinstance(report, edgeprof.RepeatedResult) else [report]
    calibrations = _load_calibrations(args.calibrations)
    device = _device_name(args.device) if args.device else runs[0].device.name
    family = args.family or ""
    # Each target that has a calibration for this device and family, found as compare finds
    # them (an alias's, any family's where none is the family's): a target calibrated for
    # another family only made the whole command fail, and an alias's was not looked for.
    found = []
    for target in [args.target] if args.target else sorted(
            {c.projection.target for c in calibrations}):
        cal = edgeprof.analysis.find_calibration(calibrations, device, target, family,
                                                 runs[0].plan.core_emulation if runs else "")
        if cal is not None:
            found.append((target, cal))
    if not found:
        what = f"{args.target!r} " if args.target else ""
        has = sorted({f"{c.projection.target} for {c.device}"
                      + (f" (family {c.family})" if c.family else "") for c in calibrations})
        raise edgeprof.Error(
            f"{args.calibrations} has no calibration {'of ' + what if what else ''}for device "
            f"{device!r}{f' and family {family!r}' if family else ''}; it has: "
            f"{'; '.join(has) or 'none'}"
            + (" (a family's is used with --family FAMILY)"
               if any(c.family and _device_name(c.device) == device for c in calibrations)
               else ""))
    out = []
    for target, cal in found:
        for i, run in enumerate(runs, 1):
            p = edgeprof.analysis.project(cal, run, args.confidence)
            out.append({"run": i, "device": device, "target": target, "estimate": p.estimate,
                        "low": p.low, "high": p.high, "confidence": p.confidence,
                        "provenance": "projected", "model": cal.projection.model,
                        "features": {f: edgeprof.results.figure(run, f)
                                     for f in cal.projection.features},
                        "feature_provenance": {f: run.figure_provenance(f)
                                               for f in cal.projection.features}})
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for o in out:
        inputs = ", ".join(f"{o['feature_provenance'][k]} {k} {v:.6g}"
                           for k, v in o["features"].items())
        print(f"run {o['run']}: {o['target']} on {o['device']} = {o['estimate']:.6g} "
              f"[{o['low']:.6g}, {o['high']:.6g}] at {o['confidence']:.0%}, projected "
              f"({o['model']} from {inputs})")
    return 0


def _provenance(row: "edgeprof.analysis.ComparisonRow", figure: str) -> str:
    """How a comparison row's figure was made: its runs' (all made alike), 'measured' without."""
    return row.result.runs[0].figure_provenance(figure) if row.result.runs else "measured"


def cmd_demo(args: argparse.Namespace) -> int:
    device = _device(args)
    unrated = device.nn is None and device.nn_ms and args.speed_kind != "integer"
    # The emulation options checked, and this host's nn rating, which the first run would
    # measure, measured before the header (with its progress), so the header says the speed the
    # runs emulate: it said the integer speed, and the runs then ran at the nn speed; and an
    # option the plan refuses (--cpu-period-us 500) was refused after the header and the first
    # workload's line.
    edgeprof.plan_emulation(device, **_plan_options(args))
    if unrated:
        device = _device(args)
    shown = device.for_speed_kind(args.speed_kind)  # the speed the runs emulate
    # Measured but not cached (a CPU shared while it ran, a cache that cannot be written):
    # the runs measure it again, and emulate what they measure.
    speed = ("the nn speed each run measures (this host's nn rating is not cached)"
             if unrated and device.nn is None else shown.speed_text)
    rows = []
    print(f"edgeprof demo: {len(WORKLOADS)} example workloads on {device.name} "
          f"({device.cores} cores x speed {speed}, "
          f"{edgeprof.devices.format_size(device.memory_bytes)}), "
          f"cgroup mode {edgeprof.emulation.cgroup_mode()}",
          file=sys.stderr)
    for i, (name, (script, extra, description)) in enumerate(WORKLOADS.items(), 1):
        print(f"[{i}/{len(WORKLOADS)}] {name}: {description} ...", file=sys.stderr, flush=True)
        result = edgeprof.run([sys.executable, str(script), *extra], device=device,
                              stdout=subprocess.DEVNULL, timeout=args.timeout,
                              **_run_options(args))
        rows.append((name, result))
    rows.sort(key=lambda row: (not row[1].ok, row[1].all_cores_s(row[1].wall_time_s)))
    # A failed workload has no rank (compare's rule): its time is the failure's.
    ranks = [i if r.ok else None for i, (_, r) in enumerate(rows, 1)]
    if args.json:
        print(json.dumps([{"workload": n, "rank": rank, **json.loads(r.to_json())}
                          for rank, (n, r) in zip(ranks, rows)], indent=2))
        return 0 if all(r.ok for _, r in rows) else 1
    print(f"\nmeasured on {device.name} (emulated); ranked by wall time with all its cores")
    print(f"{'rank':>4}  {'workload':<10} {'wall s':>8} {'infer s':>8} {'cpu s':>7} "
          f"{'peak memory':>12} {'model mem':>10} {'throttled':>9}  outcome")
    for rank, (name, r) in zip(ranks, rows):
        peak = edgeprof.devices.format_size(r.peak_memory_bytes) if r.peak_memory_bytes else "n/a"
        phases = {p.name: p for p in r.phases}
        infer = phases.get("inference")
        load = phases.get("load")
        infer_s = f"{infer.wall_time_s:.3f}" if infer else "n/a"
        wall_s = f"{r.wall_time_s:.3f}"
        if r.plan.threads_projection is not None:
            wall_s = f"{r.projected_s(r.wall_time_s):.3f}*"
            if infer:
                infer_s = f"{r.projected_s(infer.wall_time_s):.3f}*"
        model = (edgeprof.devices.format_size(max(load.memory_net_peak_bytes, 0))
                 if load and load.memory_net_peak_bytes is not None else "n/a")
        outcome = "ok" if r.ok else ("OOM-killed" if r.oom_killed else
                                     "timed out" if r.timed_out else f"failed ({r.exit_code})")
        print(f"{rank or '-':>4}  {name:<10} {wall_s:>8} {infer_s:>8} "
              f"{r.cpu_user_s + r.cpu_system_s:>7.3f} {peak:>12} {model:>10} "
              f"{r.throttled_s:>8.3f}s  {outcome}")
    print("\nwall, infer (the inference phase): monotonic clock, measured; cpu and peak memory: "
          f"cgroup counters ({rows[0][1].peak_memory_source}), measured; model mem: memory the "
          "load phase added, sampled every 10 ms; "
          + ("wall and infer s marked * projected to all the device's cores from one "
             "(core emulation projected; cpu and throttled are the one core's)"
             if any(r.plan.threads_projection is not None for _, r in rows) else "none projected"))
    return 0 if all(r.ok for _, r in rows) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgeprof", description="Profile workloads under emulated edge devices.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"edgeprof {edgeprof.__version__}")
    sub = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")

    p = sub.add_parser("devices", help="list the catalog and your device files, or show one",
                       epilog="examples:\n  edgeprof devices\n  edgeprof devices show "
                       "raspberry-pi-4\n  edgeprof devices show ./my-board.toml --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", nargs="*", metavar="show NAME",
                   help="show one device (a name or a device file) with every figure's source")
    p.add_argument("--json", action="store_true",
                   help="print the devices as JSON (as device files hold them)")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("calibrate-host", help="measure (or show the cached) per-core scores of "
                       "this host, against which probed devices' speeds are computed, and its "
                       "speed relative to the catalog's reference core",
                       epilog=_examples("calibrate-host"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--remeasure", action="store_true",
                   help="measure this host's per-core scores again, ignoring their cache "
                   "(--reference and --nn always measure theirs)")
    p.add_argument("--reference", action="store_true",
                   help="measure this host against the catalog's reference core with 7-Zip's "
                   "single-thread benchmark (40-60 s; needs 7zz, 7z or 7za), so that catalog "
                   "devices run at their speed on this host")
    p.add_argument("--nn", action="store_true",
                   help="measure this host's CNN inference speed: reference graphs with ncnn "
                   "(installed with edgeprof), one thread (8 s on an Intel Xeon), then this host's "
                   "own share under a CPU quota with them (about a minute); catalog devices "
                   "with published ncnn times are then emulated at their nn speed "
                   "(docs/fidelity.md)")
    p.add_argument("--runtime", default="ncnn",
                   choices=[r.id for r in edgeprof.nn.nn_runtimes()],
                   help="with --nn, the runtime to measure: ncnn (default: its reference graphs, "
                   "then the emulation's own share), " + ", ".join(
                       f"{r.id} ({len(r.models)} models, "
                       f"{r.precision}, random weights; `{r.install}`)"
                       for r in edgeprof.nn.nn_runtimes() if r.id != "ncnn"))
    p.add_argument("--python", help="the Python interpreter that has the runtime (default: "
                   "$EDGEPROF_PYTHON, else for ncnn this one, edgeprof's, else python3)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_calibrate_host)

    p = sub.add_parser("calibrate-speed", help="find the core speed that reproduces figures "
                       "measured on the real device", epilog=_examples("calibrate-speed"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_device_options(p)
    p.add_argument("-w", "--workload", action="append", metavar="NAME=COMMAND",
                   help="a workload you measured on the device (several times for several)")
    p.add_argument("--file", help="a file of workloads, one 'NAME: COMMAND' per line")
    p.add_argument("-m", "--measured", action="append", metavar="NAME=SECONDS",
                   help="what workload NAME measured on the device (its --figure)")
    p.add_argument("--figure", default="wall_time_s",
                   help="the figure compared (default wall_time_s)")
    p.add_argument("--repeat", type=_count, default=3,
                   help="runs per workload and speed; their median counts (default 3)")
    p.add_argument("--periods-ms", metavar="MS,MS,...",
                   help="candidate CFS periods; the one with the smallest residual wins "
                   "(default: the --cpu-period-us or --iteration-time one)")
    p.add_argument("--timeout", type=_timeout, help="kill a run after this long (e.g. 60, 60s, 500ms; a bare number is seconds; inf: no limit)")
    p.add_argument("--save", metavar="FILE",
                   help="write the device with the calibrated speed as a device file (JSON)")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the calibration as JSON to FILE, or to stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_calibrate_speed)

    p = sub.add_parser("run", help="run a command on an emulated device",
                       epilog=_examples("run"), formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_device_options(p)
    p.add_argument("--timeout", type=_timeout, help="kill the workload after this long "
                   "(e.g. 60, 60s, 500ms; a bare number is seconds; inf: no limit)")
    m = p.add_argument_group("measurement")
    m.add_argument("--interval", type=_interval, default=edgeprof.emulation.DEFAULT_INTERVAL_S,
                   help="sampling interval, 1ms to 60s (e.g. 10ms, 0.5s; a bare number is "
                   "seconds), or 'off' (default 10ms)")
    m.add_argument("--repeat", type=_count, default=1,
                   help="run N times, each in a fresh slice, and print statistics")
    m.add_argument("--warmup", type=_whole, default=0,
                   help="runs before the counted ones, reported apart (default 0)")
    m.add_argument("--isolate-network", action="store_true",
                   help="run in a network namespace of its own, loopback only (an offline "
                   "device); its network traffic is then reported")
    o = p.add_argument_group("output (the readable summary goes to stderr)")
    o.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the result as JSON to FILE, or to stdout without FILE (the "
                   "workload's stdout then goes to stderr)")
    o.add_argument("--csv", metavar="FILE", help="write the sampled time series as CSV")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("show", help="print a saved JSON report (edgeprof run --json FILE)",
                       epilog=_examples("show"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="the JSON file")
    p.add_argument("--csv", metavar="FILE", help="also write its time series as CSV")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("compare", help="run several commands on one or more devices and rank them",
                       epilog=_examples("compare"), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--workload", action="append", metavar="NAME=COMMAND",
                   help="a workload to compare (give it several times)")
    p.add_argument("--file", help="a file of workloads, one 'NAME: COMMAND' per line")
    p.add_argument("--device", action="append",
                   help="a device: a built-in name, a user device or a device file (several "
                   "times for several; default raspberry-pi-4)")
    p.add_argument("--threads", type=_count, metavar="N",
                   help="the workloads' busy threads: emulate at most N cores of each device "
                   "(docs/threads.md)")
    p.add_argument("--runtime", choices=[r.id for r in edgeprof.nn.nn_runtimes()],
                   help=_RUNTIME_HELP)
    p.add_argument("--memory-mb-per-ms", type=float, metavar="M",
                   help=_MEMORY_HELP + "; every workload compared gets it: compare one "
                   "workload's models, or run each apart")
    p.add_argument("--repeat", type=_count, default=5, help="runs per workload and device (5)")
    p.add_argument("--warmup", type=_whole, default=0, help="warm-up runs, not counted (0)")
    p.add_argument("--metric", default="all_cores_wall_time_s",
                   help="figure to rank by, lower is better (default all_cores_wall_time_s: "
                   "the device's time with all its cores, projected or measured; e.g. "
                   "wall_time_s, phase.inference.all_cores_wall_time_s)")
    p.add_argument("--test", choices=["mann-whitney", "welch"], default="mann-whitney",
                   help="test deciding ties (default mann-whitney)")
    p.add_argument("--alpha", type=_fraction, default=0.05, help="significance level (0.05)")
    p.add_argument("--calibrations", help="calibration file (edgeprof fit) to project with")
    p.add_argument("--target", help="with --calibrations, the calibrated figure to project "
                   f"(default {_DEFAULT_TARGET})")
    p.add_argument("--interval", type=_interval, default=edgeprof.emulation.DEFAULT_INTERVAL_S,
                   help="sampling interval (e.g. 10ms, 0.5s; a bare number is seconds; "
                   "default 10ms)")
    p.add_argument("--timeout", type=_timeout, help="kill a run after this long (e.g. 60, 60s, 500ms; a bare number is seconds; inf: no limit)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the comparison (every run included) as JSON")
    _add_emulation_options(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("fit", help="fit a projection from a CSV of emulated vs device figures",
                       epilog=_examples("fit"), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="one row per calibration workload, with a header")
    p.add_argument("--x", action="append", required=True,
                   help="column measured by edgeprof (several times for several features)")
    p.add_argument("--y", required=True, help="column measured on the device")
    p.add_argument("--device",
                   help="the device the --x columns' runs emulated, by the name they recorded "
                   "(an alias or a device file is resolved to it; project and compare look "
                   "calibrations up by it; default: the CSV's device column, which edgeprof "
                   "figures writes)")
    p.add_argument("--family", help="model family the calibration is for (default: any)")
    p.add_argument("--model", default="auto",
                   choices=["auto", "linear", "origin", "loglog", "theil_sen", "multi"],
                   help="the projection's model (default auto: with one --x, the one of the "
                   "least median leave-one-out error; with several, multi; docs/projection.md)")
    p.add_argument("--ridge", type=_non_negative, default=0.0,
                   help="ridge penalty, 0 or more (multi only; default 0)")
    p.add_argument("--core-emulation", choices=["projected", "pooled", "per-core"],
                   help="how the runs of the --x columns emulated the device's cores (what the "
                   "reports' text says: projected, pooled or per-core): recorded, so that "
                   "project refuses a report emulated otherwise unless every feature is an "
                   "all_cores_* or memory figure (default: the CSV's core_emulation column, "
                   "which edgeprof figures writes)")
    p.add_argument("-o", "--output", help="calibration file to add it to (replacing one for "
                   "the same device, family, target and core emulation, and one that recorded "
                   "no core emulation)")
    p.add_argument("--json", action="store_true", help="print the calibration as JSON")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("figures", help="saved reports' figures as CSV, one row per report (a "
                       "repeated report's medians): add the device's column, then fit",
                       epilog=_examples("figures"), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", nargs="+", help="JSON reports (edgeprof run --json FILE)")
    p.add_argument("--figure", action="append",
                   help="a figure to write (several times for several; default: "
                   f"{', '.join(DEFAULT_FIGURES)}); any name edgeprof.results.figure takes, "
                   "e.g. phase.inference.wall_time_s")
    p.add_argument("--csv", default="-", metavar="FILE", help="where to write it (default: "
                   "stdout)")
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("project", help="apply saved calibrations to a report",
                       epilog=_examples("project"), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", help="a JSON report (edgeprof run --json FILE)")
    p.add_argument("--calibrations", required=True, help="the calibration file (edgeprof fit)")
    p.add_argument("--device", help="the device to project to (default: the report's)")
    p.add_argument("--family", help="model family (default: a calibration for any family)")
    p.add_argument("--target", help="only this calibrated figure (default: every one)")
    p.add_argument("--confidence", type=_fraction, default=0.95,
                   help="of the interval, a fraction (0.95)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_project)

    p = sub.add_parser("demo", help="profile the bundled example workloads and rank them",
                       epilog=_examples("demo"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_device_options(p)
    p.add_argument("--timeout", type=_timeout, default=300.0, help="per workload (default 300 s; e.g. 60, 60s, inf)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_demo)
    # `edgeprof COMMAND --help` said nothing of what COMMAND does: its line of the list.
    for action in sub._choices_actions:
        command = sub.choices[action.dest]
        command.description = command.description or action.help
    # Every option that takes a free text (a file, a device, a figure, a workload) refuses an
    # empty one, which would otherwise read as not given (`--json ''` wrote nothing).
    for p in [parser, *sub.choices.values()]:
        for action in p._actions:
            if action.type is None and action.choices is None and action.nargs in (None, "?"):
                action.type = _given
    return parser


def _runtime_and_speed_kind(args: argparse.Namespace) -> None:
    """--runtime beside --speed-kind: ncnn's is the nn speed (measured on first use like it);
    with the integer speed it contradicts."""
    runtime, kind = getattr(args, "runtime", None), getattr(args, "speed_kind", None)
    memory = getattr(args, "memory_mb_per_ms", None)
    if memory is not None and not (0 < memory < math.inf):
        raise edgeprof.Error(f"--memory-mb-per-ms {memory:g}: give the workload's activation MB "
                             "per ms of this host's one-thread time, a positive number "
                             "(edgeprof.nn.memory_intensity measures it), or leave it out for "
                             "one speed over the models")
    if memory is not None and runtime in (None, "ncnn"):
        raise edgeprof.Error(f"--memory-mb-per-ms {memory:g} chooses a workload's own speed "
                             "with a runtime other than ncnn: add --runtime pytorch, "
                             "onnxruntime or pytorch-int8 (the one the workload runs)")
    if runtime is None or kind is None:
        return
    if kind == "integer":
        raise edgeprof.Error(f"--runtime {runtime} emulates the device at its speed with "
                             f"{runtime}, --speed-kind integer at its 7-Zip speed: give one")
    if runtime == "ncnn":
        args.speed_kind, args.runtime = "nn", None


# The signals that end the CLI as Ctrl-C does: SIGTERM (systemd, Kubernetes, Slurm,
# timeout(1)) and SIGHUP (the terminal or ssh session closed).
_ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived. Raised by the handler where the command waits (the core checks
    for signals while it waits, as for Ctrl-C), so the workload is killed and its slice removed
    on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    # Once: a second signal while the first unwinds (killing the workload, removing the slice)
    # must not interrupt that.
    # Only the ones main() took over: a caller's own handler stays.
    for ending in _ENDING_SIGNALS:
        if signal.getsignal(ending) is _raise_terminated:
            signal.signal(ending, signal.SIG_IGN)
    raise _Terminated(signum)


# What a write to a terminal or pipe that has gone away fails with.
_GONE = (errno.EPIPE, errno.EIO, errno.ENXIO)
# A stream's file that is full (`> /dev/full`, a disk or quota filled by a large --csv -):
# said and exit 1, not a traceback.
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _to_devnull(*streams) -> None:
    """Points the streams' descriptors at /dev/null, so that Python's flush at exit does not
    fail again on a reader or terminal that has gone away."""
    for stream in streams:
        if stream is None:  # closed when Python started (`>&-`)
            continue
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass


def _tell(message: str) -> None:
    """Print the last word on stderr; after a hangup the terminal may be gone (EIO) or the
    reader of a pipe (EPIPE): the exit code still says what happened."""
    try:
        print(message, file=sys.stderr, flush=True)
    except OSError as e:
        if e.errno in _GONE or e.errno in _FULL:  # 2>/dev/full too: nowhere left to say it
            _to_devnull(sys.stderr)


def _flush_stdout() -> None:
    """Flushes what stdout holds now, where a failure can be handled: at exit, a reader gone
    with the session would turn the signal's exit code into 120."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as e:
        if e.errno not in _GONE and e.errno not in _FULL:
            raise
        _to_devnull(sys.stdout)


def _ending(e: BaseException) -> Optional[BaseException]:
    """The Ctrl-C or SIGTERM/SIGHUP that `e` was raised while handling (a progress bar's
    last write to a terminal that had gone away), if any."""
    while e is not None:
        if isinstance(e, (_Terminated, KeyboardInterrupt)):
            return e
        e = e.__context__
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    # A path that is not UTF-8 (a device file's, the cache's) reaches Python as os.fsdecode()
    # gives it; printed, it is its own bytes again, as ls(1) and cat(1) would print them.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")
    args = build_parser().parse_args(argv)
    # An ignored SIGCHLD passed on by the parent (it survives exec) loses every workload's exit
    # status, and the library refuses to run then: this process is the command's own.
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGCHLD) is signal.SIG_IGN):
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # Only over the default action (an ignored SIGHUP, as under nohup, stays ignored; a
    # caller's handler stays), and only the main thread may set one.
    handled = [s for s in _ENDING_SIGNALS
               if threading.current_thread() is threading.main_thread()
               and signal.getsignal(s) is signal.SIG_DFL]
    try:
        for s in handled:
            signal.signal(s, _raise_terminated)
        _runtime_and_speed_kind(args)
        code = args.func(args)
        # Here, where a failure is handled (a full disk: at exit it was "Exception ignored"
        # and exit 120).
        if sys.stdout is not None:
            sys.stdout.flush()
        try:  # what stderr holds (a progress bar's last line) failed at exit: exit 120
            if sys.stderr is not None:
                sys.stderr.flush()
        except OSError:  # its notes are lost; the command's output stands, and its code
            _to_devnull(sys.stderr)
        return code
    except edgeprof.Error as e:
        _tell(f"edgeprof: {e}")
        return 2
    except KeyboardInterrupt:
        _flush_stdout()
        _tell("edgeprof: interrupted; the workload was killed and its slice removed")
        return 130
    except _Terminated as e:
        _flush_stdout()
        name = signal.Signals(e.signum).name
        _tell(f"edgeprof: terminated ({name}); the workload was killed and its slice removed")
        return 128 + e.signum
    except OSError as e:
        if e.errno in _FULL:
            try:  # stdout's own? What it still holds would fail again at exit; stderr's not
                if sys.stdout is not None:
                    sys.stdout.flush()
            except OSError:
                _to_devnull(sys.stdout)
            where = f" {os.fsdecode(e.filename)}" if e.filename else " the output"
            _tell(f"edgeprof: cannot write{where}: {e.strerror} (errno {e.errno})")
            return 1
        if e.errno not in _GONE:
            raise
        ending = _ending(e)
        if ending is None and e.errno != errno.EPIPE:
            # EIO or ENXIO of a file (a disk, NFS), or of the terminal: said if it can be.
            _tell(f"edgeprof: {e}")
            return 1
        # The reader went away (`edgeprof devices | head`): not an error of ours; or the
        # terminal or pipe with a hangup, whose signal then says how the command ended.
        _to_devnull(sys.stdout, sys.stderr)
        if isinstance(ending, _Terminated):
            return 128 + ending.signum
        if isinstance(ending, KeyboardInterrupt):
            return 130
        return 141
    finally:
        for s in handled:
            signal.signal(s, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
