# edgeprof's activation counter. A slice that counts its workload's activations
# (PlanOptions::count_activations, on by default) writes this file as
# sitecustomize.py into a directory of its own, with torch_runner.py beside it, and puts that
# directory first on the workload's PYTHONPATH. In a Python that then imports PyTorch it:
# 1. counts, with a forward hook on every module (torch's global hooks), the bytes the layers
#    of the model's first call write (torch_runner.written_bytes: the rule this host's PyTorch
#    rating counts its models' activations by); the model is the first module with weights
#    called outside any other (a transform, which has none, is not) to infer on the CPU (in
#    eval mode or with autograd off: a training step's forward is not counted, nor a model on
#    a GPU);
# 2. removes those hooks (up to 28% of an inference while attached, measured) and times
#    the model's next calls with the counted call's shapes (of its positional arguments and
#    its output; keyword arguments are not compared) by the calling thread's CPU time, PyTorch
#    set to one thread for each (as this host's rating ran; process-wide, as PyTorch's setting
#    is; the workload's own thread count back after it), with a hook on the model alone;
# 3. after TIMED such calls, writes one line on edgeprof's phase channel,
#    "<CLOCK_MONOTONIC ns> A <MB> <CPU ms> <TIMED>", the CPU ms the median of the TIMED, and
#    removes its hooks. The slice then runs the device at its PyTorch speed with the memory
#    term of that MB per ms.
# Where the slice counts ONNX Runtime's workloads too (EDGEPROF_COUNT_RUNTIMES, which lists the
# runtimes the slice counts: "pytorch" without it), in a Python that imports ONNX Runtime
# instead it wraps InferenceSession.run (and __init__, which keeps a relative model path's
# absolute one) until the first session that runs on the CPU provider with arrays (GIVE_UP runs of others: it gives up); before
# that run, in its thread, it counts the MB the nodes of the session's ONNX graph write in one
# inference (torch_runner.ort_written_mb: a copy of the session at one thread without graph
# optimisations, profiled: the ONNX Runtime rating's rule), times TIMED inferences of another
# copy at one intra-op thread (the rating's options) by the calling thread's CPU time after one
# warm-up, and writes "<ns> A <MB> <CPU ms> <TIMED> onnxruntime"; the workload's own session is
# left as it was (its first run waits for the count: two sessions made and seven inferences).
# The copies are made, one at a time, only where what the slice uses plus COPY_BYTES times the
# model's size (and its inputs' and activations' bytes) fits under the slice's memory limit
# (EDGEPROF_COUNT_MEMORY_BYTES; the use read from EDGEPROF_COUNT_MEMORY_USAGE less the inactive
# file cache of EDGEPROF_COUNT_MEMORY_STAT); else it writes
# "<ns> A skip onnxruntime memory <used> <needed> <limit>" (bytes), and the slice says so.
# Where the slice counts PyTorch's int8 workloads instead ("pytorch-int8" in
# EDGEPROF_COUNT_RUNTIMES: a run named at that speed), it wraps torch.nn.Module.__call__ until
# a model is counted: each outermost call of a module with children or of a TorchScript module
# (whose layers run no hooks) that infers, and is not being calibrated, runs under an operator
# counter (torch_runner.op_writes: the bytes its
# operators write, the int8 rating's rule); the first that ran a quantized operator is the model;
# its next TIMED calls with the counted call's argument and output shapes are timed as above, by
# the wrapper (eager or TorchScript: no hook can be registered on a TorchScript model), and it
# writes
# "<ns> A <MB> <CPU ms> <TIMED> pytorch-int8"; the wrapper then goes.
# It first takes its directory off sys.path, so that the workload's imports see what they would
# have without it (off PYTHONPATH too once the process imports PyTorch: a launcher that does
# not, and execs the Python that infers or starts it with the channel's fd open, passes the
# counter on; each process that imports PyTorch with it counts), then runs the environment's own
# sitecustomize if there is one. A model is a module with weights called outside any other
# module (in int8, one that ran a quantized operator); the hooks go after GIVE_UP such calls
# without one. Nothing is counted in a Python
# started with -S, -I or -E (no sitecustomize, or not this one), with a PyTorch before 2.1 (its
# global hooks do not run on an exception; fp32 only), outside an edgeprof slice (no channel),
# for a TorchScript model in fp32 (its layers run no hooks), for a model compiled by torch.compile (an
# OptimizedModule, Module.compile(), or a hook run under dynamo's tracing: the hooks go), or in
# a workload that calls its model fewer than TIMED + 1 times with the shapes of its first call
# (the hooks go after GIVE_UP calls with others, or GIVE_UP_OUTPUTS in a row with its
# arguments' shapes but other outputs: a decoder); an error of its own never reaches the
# workload.
import importlib.machinery
import importlib.util
import os
import stat
import sys
import threading
import time

TIMED = 5
GIVE_UP = 32  # calls outside any other module without a model's among them
# Timed calls in a row with the counted call's arguments but other outputs (each ran at one
# PyTorch thread): a decoder's tokens, which will not time as the count.
GIVE_UP_OUTPUTS = 3
GIVE_UP_CALLS = 10_000_000  # module calls in all without a count: a backstop
COPY_BYTES = 5  # the room a copy of an ONNX Runtime session takes, in its model's sizes
HERE = os.path.dirname(os.path.abspath(__file__))


def _off_sys_path():
    """This directory off sys.path: the workload's imports see what they would without it."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]


def _off_env():
    """This directory off PYTHONPATH (the rest as it was: edgeprof put this directory in front
    of it, with a colon where it was set, even empty): the processes started from then on do
    not count. Done once this process has imported PyTorch (its children are its workers), at
    once outside a slice; a launcher that does not (poetry run, a script that starts the Python
    that infers with the channel's fd open) passes it on. Where the workload put entries of its
    own in front meanwhile, the first entry that is this directory goes."""
    parts = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    at = next((i for i, p in enumerate(parts) if p and os.path.abspath(p) == HERE), None)
    if at is None:
        return
    del parts[at]
    if parts:
        os.environ["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        del os.environ["PYTHONPATH"]


def _channel():
    """edgeprof's phase channel (EDGEPROF_PHASE_FD, "<fd>:<inode>" of a pipe), else None."""
    try:
        fd, inode = (int(x) for x in os.environ.get("EDGEPROF_PHASE_FD", "").split(":"))
        st = os.fstat(fd)
    except (ValueError, OSError):
        return None
    return fd if stat.S_ISFIFO(st.st_mode) and st.st_ino == inode else None


def _write(fd, text):
    """"<CLOCK_MONOTONIC ns> A <text>" as one line on the phase channel."""
    line = f"{time.clock_gettime_ns(time.CLOCK_MONOTONIC)} A {text}\n"
    try:
        os.write(fd, line.encode())
    except OSError:  # the pipe is full or closed: the line is lost, the workload goes on
        pass


def _send(fd, mb, cpu_ms, calls, runtime=""):
    _write(fd, f"{mb:.6g} {cpu_ms:.6g} {calls}" + (f" {runtime}" if runtime else ""))


def _runner():
    """torch_runner (the ratings' runner, whose counting rules these are), loaded from this
    directory under a name of edgeprof's."""
    spec = importlib.util.spec_from_file_location(
        "_edgeprof_torch_runner", os.path.join(HERE, "torch_runner.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _written_bytes():
    return _runner().written_bytes


def _leaf(module):
    return next(module.children(), None) is None


def _model(module):
    """A module with weights: a model, where a transform or a layer of none is not."""
    return next(module.parameters(), None) is not None


def _inference(torch, module):
    """A call that infers on the CPU, as the rating's did: not a training step's forward (a
    module in training mode with autograd on for its weights: it keeps its activations for the
    backward pass) nor a model whose weights are on another device (a GPU's time is not the
    CPU's). A training step counts toward GIVE_UP as any call without a model does."""
    weight = next(module.parameters(), None)
    if weight is None:
        return True
    if weight.device.type != "cpu":
        return False
    return not (module.training and torch.is_grad_enabled()
                and getattr(weight, "requires_grad", True))


class _Hooks:
    """The counter's hook handles. A forward hook never removes them: PyTorch runs the
    always_call forward hooks of a call that raised from its live tables, which a removal would
    change under it (a RuntimeError in the workload); they go at the next pre-hook (PyTorch runs
    a copy of those), from set-up, or in a forked child. (A pre-hook in another thread may still
    remove them while one thread's raising call runs those hooks: rare, not guarded.) An error
    of a hook's own, or a hook run under torch.compile's tracing, ends them: never the
    workload's error, which runs on uncounted."""

    def __init__(self, torch):
        self.handles, self.done = [], False
        # torch.compiler.is_compiling from PyTorch 2.3, torch._utils.is_compiling before.
        self.compiling = (getattr(getattr(torch, "compiler", None), "is_compiling", None)
                          or getattr(getattr(torch, "_utils", None), "is_compiling", None)
                          or (lambda: False))

    def end(self):
        self.done = True

    def remove(self):
        self.done = True
        for h in self.handles:
            h.remove()
        self.handles.clear()

    def pre(self, hook):
        def run(module, args):
            if self.done:
                self.remove()
                return
            try:
                if self.compiling():  # under dynamo (a model compiled after its count)
                    self.end()
                    return
                hook(module, args)
            except Exception:
                self.remove()
        return run

    def post(self, hook):
        def run(module, args, output):
            try:
                if self.compiling():
                    self.end()
                    return
                hook(module, args, output)
            except Exception:
                self.end()
        return run


def _shapes(value, depth=0):
    """The shapes and types of the tensors in a call's arguments or output, nested in lists,
    tuples and dicts (anything else by its type): a timed call has the counted call's, so that
    its time is that of the activations counted."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return tuple(value.shape), str(value.dtype)
    if depth < 4 and isinstance(value, (list, tuple)):
        return tuple(_shapes(v, depth + 1) for v in value)
    if depth < 4 and isinstance(value, dict):
        return tuple((k, _shapes(v, depth + 1)) for k, v in value.items())
    return type(value).__name__


def _compiled(module):
    """A model compiled by torch.compile (torch._dynamo's OptimizedModule) or Module.compile():
    its layers run under dynamo, which would trace the hooks into its graph."""
    kind = type(module)
    return (kind.__name__ == "OptimizedModule" and kind.__module__.startswith("torch._dynamo")) \
        or getattr(module, "_compiled_call_impl", None) is not None


def _time(torch, model, counted_bytes, shapes, fd):
    """Times the model's next TIMED calls with the counted call's `shapes` (of its arguments
    and its output) by the calling thread's CPU time, at one PyTorch thread (the calling one:
    the rating's), then reports. One call at a time: a call from another thread while one is
    timed is not timed; a call from the same thread is taken as the timed one's end lost (a
    KeyboardInterrupt in its forward, which runs no forward hook), not as the model within
    itself."""
    hooks = _Hooks(torch)
    times = []
    call = {"thread": None, "start": 0, "threads": 1, "other": 0, "outputs": 0}

    def restore():
        call["thread"] = None
        if call["threads"] != 1:
            torch.set_num_threads(call["threads"])

    def before(module, args):
        me = threading.get_ident()
        if call["thread"] is not None:
            if call["thread"] != me:
                return
            restore()  # its end was lost
        if _compiled(module):
            hooks.remove()
            return
        if _shapes(args) != shapes[0] or not _inference(torch, module):
            call["other"] += 1
            if call["other"] >= GIVE_UP:  # not the counted shapes again: nothing to report
                hooks.remove()
            return
        threads = torch.get_num_threads()
        if threads != 1:
            torch.set_num_threads(1)
            if torch.get_num_threads() != 1:  # not here (PyTorch's own pool, once it ran)
                torch.set_num_threads(threads)
                hooks.remove()
                return
        call.update(thread=me, threads=threads, start=time.thread_time_ns())

    def after(module, args, output):
        if call["thread"] != threading.get_ident():
            return
        spent = time.thread_time_ns() - call["start"]
        restore()
        if hooks.done or output is None:
            return  # an exception ended the call: not timed
        if _shapes(output) != shapes[1]:  # other outputs (a token after the prompt): not timed
            call["other"] += 1
            call["outputs"] += 1
            if call["other"] >= GIVE_UP or call["outputs"] >= GIVE_UP_OUTPUTS:
                hooks.end()
            return
        call["outputs"] = 0
        times.append(spent)
        if len(times) == TIMED:
            hooks.end()
            cpu_ms = sorted(times)[TIMED // 2] / 1e6
            if cpu_ms > 0:
                _send(fd, counted_bytes / 1e6, cpu_ms, TIMED)

    # First among the model's own hooks, as the global ones ran: the arguments and output they
    # see are the counted call's kind, before a workload's hook rewrites them.
    hooks.handles.append(model.register_forward_pre_hook(hooks.pre(before), prepend=True))
    hooks.handles.append(model.register_forward_hook(hooks.post(after), prepend=True,
                                                     always_call=True))
    _FORKED.append(hooks.remove)


def _count(torch, fd):
    """Global hooks on every module, until a model's first call has been counted, or GIVE_UP
    calls outside any other module went by without one."""
    written_bytes = _written_bytes()
    registry = torch.nn.modules.module
    state = {"depth": 0, "top": None, "bytes": 0, "outer": 0, "shapes": (), "calls": 0,
             "infer": True}
    hooks = _Hooks(torch)

    def before(module, args):
        state["calls"] += 1
        if state["calls"] > GIVE_UP_CALLS:
            hooks.remove()
            return
        if state["depth"] > 0 and module is state["top"]:
            # The top call again inside itself: its end was lost (a KeyboardInterrupt in its
            # forward runs no forward hook). Counted afresh from here.
            state["depth"] = 0
        if state["depth"] == 0:
            if _compiled(module):  # before dynamo traces the hooks into its graph
                hooks.remove()
                return
            state["top"], state["bytes"], state["shapes"] = module, 0, _shapes(args)
            state["infer"] = _inference(torch, module)
            state["outer"] += 1
        state["depth"] += 1

    def after(module, args, output):
        if hooks.done:
            return
        state["depth"] = max(state["depth"] - 1, 0)
        if output is None:  # an exception ended the call (always_call runs this anyway)
            state["top"] = None
        elif _leaf(module) and state["infer"]:
            state["bytes"] += written_bytes(module, args, output, torch)
        if state["depth"] != 0 or output is None:
            return
        if module is state["top"] and _model(module) and state["infer"]:
            hooks.end()  # counted: the hooks go
            if state["bytes"] > 0:  # nothing for a TorchScript model: its layers run no hooks
                _time(torch, module, state["bytes"], (state["shapes"], _shapes(output)), fd)
        elif state["outer"] >= GIVE_UP:
            hooks.end()

    # Only where an exception still runs the hook that closes a call (PyTorch 2.1 and later):
    # without it, the depth would be lost at the first one.
    hooks.handles.append(registry.register_module_forward_pre_hook(hooks.pre(before)))
    try:
        hooks.handles.append(registry.register_module_forward_hook(hooks.post(after),
                                                                   always_call=True))
    except Exception:
        hooks.remove()
        raise
    _FORKED.append(hooks.remove)


def _observed(torch, module):
    """Whether `module` holds an observer or a fake quantizer (a model being calibrated for
    quantization, as quantize_model does with a batch or many): not the quantized model yet."""
    quantization = getattr(getattr(torch, "ao", None), "quantization", None)
    bases = tuple(b for b in (getattr(quantization, n, None)
                              for n in ("ObserverBase", "FakeQuantizeBase")) if b is not None)
    return bool(bases) and any(isinstance(m, bases) for m in module.modules())


def _count_int8(torch, fd):
    """torch.nn.Module.__call__ wrapped (for every module class that does not define its own)
    until an int8 model is counted and timed, or GIVE_UP outermost calls of modules with
    children went by without one: the outermost call of each thread that infers on the CPU of a
    module with children or of a TorchScript module (not a layer called alone, as quantizing
    calls its observers, nor a model being calibrated) runs under an operator counter
    (op_writes); the first that ran a quantized operator is counted, and its next calls with
    its argument shapes and output's are timed at one PyTorch thread, by the calling thread's
    CPU time, as _time does; the wrapper is put back after TIMED of them. Any error of its own
    puts it back, and never reaches the workload."""
    writes = _runner().op_writes(torch)
    module_class = torch.nn.Module
    original = module_class.__call__
    script = getattr(getattr(torch, "jit", None), "ScriptModule", ())
    compiling = _Hooks(torch).compiling
    local = threading.local()  # .depth: this thread's module calls in progress
    state = {"model": None, "bytes": 0, "shapes": None, "outer": 0, "other": 0, "outputs": 0,
             "calls": 0, "times": [], "timing": False, "done": False}
    lock = threading.Lock()
    me = os.getpid()  # a child forked inside a counted call skips what follows it

    def put_back():
        state["done"] = True
        if module_class.__call__ is call:
            module_class.__call__ = original

    def restore():
        with lock:
            put_back()

    def counted(module, args, kwargs):
        try:
            counter = writes()
            counter.__enter__()
        except Exception:  # the counter's own: the workload runs uncounted
            restore()
            return original(module, *args, **kwargs)
        try:
            output = original(module, *args, **kwargs)
        finally:
            try:
                counter.__exit__(None, None, None)
            except Exception:
                restore()
        if os.getpid() != me:
            return output
        try:
            with lock:
                if state["model"] is not None or state["done"]:
                    return output
                if counter.quantized and counter.bytes > 0 and not counter.failed:
                    state.update(model=module, bytes=counter.bytes,
                                 shapes=(_shapes(args), _shapes(output)))
                    return output
                state["outer"] += 1
                if counter.failed or state["outer"] >= GIVE_UP:
                    put_back()
        except Exception:
            restore()
        return output

    def timed(module, args, kwargs):
        with lock:
            if state["timing"] or state["done"]:  # another thread's call is timed
                return original(module, *args, **kwargs)
            state["timing"] = True
        threads = None
        try:
            threads = torch.get_num_threads()
            if threads != 1:
                torch.set_num_threads(1)
            alone = torch.get_num_threads() == 1
        except Exception:  # the counter's own
            alone = False
        if not alone:  # not here (PyTorch's own pool, once it ran): nothing is timed
            try:
                if threads is not None and threads != 1:
                    torch.set_num_threads(threads)
            except Exception:
                pass
            restore()
            return original(module, *args, **kwargs)
        start = time.thread_time_ns()
        try:
            output = original(module, *args, **kwargs)
        finally:
            spent = time.thread_time_ns() - start
            state["timing"] = False
            try:
                if threads != 1:
                    torch.set_num_threads(threads)
            except Exception:
                restore()
        if os.getpid() != me:
            return output
        send = None
        try:
            with lock:
                if state["done"]:
                    return output
                if _shapes(output) != state["shapes"][1]:  # other outputs: not timed
                    state["other"] += 1
                    state["outputs"] += 1
                    if state["other"] >= GIVE_UP or state["outputs"] >= GIVE_UP_OUTPUTS:
                        put_back()
                    return output
                state["outputs"] = 0
                times = state["times"]
                times.append(spent)
                if len(times) == TIMED:
                    put_back()
                    send = sorted(times)[TIMED // 2] / 1e6
        except Exception:
            restore()
        if send:
            _send(fd, state["bytes"] / 1e6, send, TIMED, "pytorch-int8")
        return output

    def decide(module, args):
        """What an outermost call gets: counted, timed, or None (the call alone)."""
        state["calls"] += 1
        if state["calls"] > GIVE_UP_CALLS:  # a backstop: training, say, for ever
            restore()
            return None
        if _compiled(module) or compiling():  # before dynamo traces the counter in
            restore()
            return None
        if not _inference(torch, module):
            return None
        model = state["model"]
        if model is None:
            # A layer alone (an observer while quantizing; a frozen TorchScript model has no
            # children either, and is a model) or a model being calibrated is not the model.
            if (_leaf(module) and not isinstance(module, script)) or _observed(torch, module):
                return None
            return counted
        if module is not model:  # a transform between the model's calls, say
            return None
        if _shapes(args) != state["shapes"][0]:
            state["other"] += 1
            if state["other"] >= GIVE_UP:
                restore()
            return None
        return timed

    def call(module, *args, **kwargs):
        if getattr(local, "depth", 0) or state["done"]:
            return original(module, *args, **kwargs)
        try:
            how = decide(module, args)
        except Exception:  # the counter's own, never the workload's: it runs uncounted
            restore()
            how = None
        local.depth = 1  # the calls within pass straight through
        try:
            if how is None:
                return original(module, *args, **kwargs)
            return how(module, args, kwargs)
        finally:
            local.depth = 0

    module_class.__call__ = call
    # A forked child (one thread: no lock taken) counts nothing.
    _FORKED.append(put_back)


def _ort_source(session, feed):
    """What a session's first run counts from: (the model's path or bytes, its inputs' names,
    the feed's arrays in their order), or None where it is not countable: a session that runs
    on another provider than the CPU first, a feed of other than arrays, or no model source
    kept (ONNX Runtime's InferenceSession keeps _model_path or _model_bytes; a path as the
    counter's wrapped __init__ made it absolute where it saw the session made), or a path that
    names no file from here."""
    providers = session.get_providers()
    source = (getattr(session, "_edgeprof_model_path", None)
              or getattr(session, "_model_path", None) or getattr(session, "_model_bytes", None))
    if not providers or providers[0] != "CPUExecutionProvider" or not source \
            or not isinstance(feed, dict):
        return None
    if isinstance(source, (str, os.PathLike)) and not os.path.isfile(source):
        return None  # a file removed since, or a relative path made before the wrapper
    names = [i.name for i in session.get_inputs()]
    arrays = tuple(feed.get(n) for n in names)
    if not all(hasattr(a, "shape") and hasattr(a, "dtype") for a in arrays):
        return None
    return source, names, arrays


def _model_bytes(source):
    """The size of the model a session was made from (its file's, or its bytes')."""
    return len(source) if isinstance(source, (bytes, bytearray)) else os.path.getsize(source)


def _resident_bytes():
    """This process's resident memory (its /proc/self/statm), else its peak (getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reclaimable_bytes():
    """The slice's inactive file cache, which the kernel reclaims before it fails an
    allocation: total_inactive_file (v1, the hierarchy's) or inactive_file (v2) of the slice's
    memory.stat (EDGEPROF_COUNT_MEMORY_STAT); 0 where it cannot be read."""
    try:
        with open(os.environ.get("EDGEPROF_COUNT_MEMORY_STAT", "")) as f:
            stat = dict(line.split()[:2] for line in f if len(line.split()) >= 2)
        return int(stat.get("total_inactive_file", stat.get("inactive_file", "0")))
    except (OSError, ValueError):
        return 0


def _used_bytes():
    """What the slice's processes use of its memory: the number in the slice's usage file
    (EDGEPROF_COUNT_MEMORY_USAGE: memory.current, memory.usage_in_bytes) less its inactive file
    cache (a dataset the workload read fills the slice with cache the kernel takes back), else
    this process's resident memory, whichever is more."""
    used = _resident_bytes()
    try:
        with open(os.environ.get("EDGEPROF_COUNT_MEMORY_USAGE", "")) as f:
            used = max(used, int(f.read().split()[0]) - _reclaimable_bytes())
    except (OSError, ValueError, IndexError):
        pass
    return used


def _room(source, extra=0):
    """Whether a copy of a session fits under the slice's memory limit
    (EDGEPROF_COUNT_MEMORY_BYTES; 0 or unset: no limit; another value: it does not), and if
    not, (what the slice uses, what a copy needs, the limit) in bytes: what the slice uses now
    (_used_bytes) plus COPY_BYTES times the model's size plus `extra` (its inputs' and
    activations' bytes) at most the limit. Making one copy of a session took up to 4.1 times
    its model's size at its peak (VGG-13's 532 MB, 1.6-2.0 times for ResNet-18 and
    EfficientNet-B0; measured, ONNX Runtime 1.32): a count that could push the workload past
    its limit is not made (it runs uncounted, at the speed over the models). A model whose
    weights are in files beside its own (ONNX's external data) is sized by its own file
    alone. Returns None where it fits."""
    text = os.environ.get("EDGEPROF_COUNT_MEMORY_BYTES", "").strip()
    if not text:
        return None
    try:
        limit = int(text)
    except ValueError:
        return (0, 0, 0)  # a limit not understood: no copy
    if limit <= 0:
        return None
    used, need = _used_bytes(), COPY_BYTES * _model_bytes(source) + extra
    return None if used + need <= limit else (used, need, limit)


def _skip(fd, runtime, why):
    """Tells the slice that its count was not made, and why: "<ns> A skip <runtime> memory
    <used> <needed> <limit>" (bytes), which the slice's warning says."""
    _write(fd, f"skip {runtime} memory " + " ".join(str(int(v)) for v in why))


def _count_ort_session(ort, source, names, arrays, fd):
    """The MB the graph's nodes write in one inference on `arrays` (the rating's graph rule,
    torch_runner.ort_written_mb), then TIMED inferences of a copy of the session at one
    intra-op thread (the rating's options) timed by this thread's CPU time after one warm-up;
    reports their median. Where a copy would not fit (_room: before the first with its
    inputs' bytes eight times over, before the second with the activations counted), nothing
    is counted, and the slice is told why (_skip)."""
    inputs = sum(int(getattr(a, "nbytes", 0)) for a in arrays)
    short = _room(source, 8 * inputs)
    if short:
        _skip(fd, "onnxruntime", short)
        return
    runner = _runner()
    mb = runner.ort_written_mb(source, arrays, ort)
    short = _room(source, inputs + int(mb * 1e6))
    if short:
        _skip(fd, "onnxruntime", short)
        return
    session = runner.onnx_session(source, 1, ort)
    feed = dict(zip(names, arrays))
    session.run(None, feed)
    times = []
    for _ in range(TIMED):
        start = time.thread_time_ns()
        session.run(None, feed)
        times.append(time.thread_time_ns() - start)
    cpu_ms = sorted(times)[TIMED // 2] / 1e6
    if mb > 0 and cpu_ms > 0:
        _send(fd, mb, cpu_ms, TIMED, "onnxruntime")


def _count_ort(ort, fd):
    """Counts the first ONNX Runtime session that runs countably (_ort_source), in the thread
    of its first run and before it: InferenceSession.run is wrapped until then, or until GIVE_UP
    runs went by that are not countable (a session on a GPU, say); InferenceSession.__init__
    too, to keep the absolute path of a model named by a relative one (the workload may change
    directory before its first run)."""
    cls = ort.InferenceSession
    own = "run" in cls.__dict__  # else inherited (ONNX Runtime's Session.run): deleted after
    original = cls.run
    own_init = "__init__" in cls.__dict__
    original_init = cls.__init__
    state = {"done": False, "passed": 0}
    lock = threading.Lock()

    def put_back(name, wrapper, own_one, original_one):
        if cls.__dict__.get(name) is wrapper:
            if own_one:
                setattr(cls, name, original_one)
            else:
                delattr(cls, name)

    def restore():
        state["done"] = True
        put_back("run", run, own, original)
        put_back("__init__", init, own_init, original_init)

    def init(self, *args, **kwargs):
        source = args[0] if args else kwargs.get("path_or_bytes")
        if isinstance(source, (str, os.PathLike)):
            try:
                self._edgeprof_model_path = os.path.abspath(source)
            except Exception:
                pass
        original_init(self, *args, **kwargs)

    def run(self, *args, **kwargs):
        if not state["done"]:
            counted = None
            try:
                feed = args[1] if len(args) > 1 else kwargs.get("input_feed")
                counted = _ort_source(self, feed)
            except Exception:
                pass
            if counted is None:
                state["passed"] += 1
                if state["passed"] >= GIVE_UP:
                    restore()
            else:
                with lock:
                    first = not state["done"]
                    restore()
                if first:
                    try:
                        _count_ort_session(ort, *counted, fd)
                    except Exception:  # never the workload's: it runs uncounted
                        pass
        return original(self, *args, **kwargs)

    cls.__init__ = init
    cls.run = run
    _FORKED.append(restore)


class _Watch:
    """A finder that counts once the module `name` (torch, onnxruntime) has run, by
    `count(module, fd)`. It stays until then: a look-up without an import
    (importlib.util.find_spec("torch"), which transformers, diffusers and lightning make before
    they import torch) must not use it up."""

    def __init__(self, fd, name, count):
        self.fd, self.name, self.count = fd, name, count
        self.looking = False

    def find_spec(self, name, path=None, target=None):
        if name != self.name or self.looking:
            return None
        self.looking = True  # the look-up below walks sys.meta_path again
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.looking = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _off_env()
            try:
                sys.meta_path.remove(self)
            except ValueError:  # another thread's import of it took it off first
                return
            try:
                self.count(module, self.fd)
            except Exception:  # never the workload's error (a PyTorch before 2.1 among them:
                pass           # no always_call): it runs uncounted

        spec.loader.exec_module = exec_module
        return spec


def _chain():
    """The environment's own sitecustomize, which this one stood in front of."""
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


# What a forked child (a DataLoader worker, say) removes: the parent counts, the child does not.
_FORKED = []


def _in_child():
    for remove in _FORKED:
        try:
            remove()
        except Exception:
            pass
    _FORKED.clear()


try:
    _off_sys_path()
    _fd = _channel()
    # The runtimes the slice counts (EDGEPROF_COUNT_RUNTIMES, PyTorch's where it says none).
    _counted = os.environ.get("EDGEPROF_COUNT_RUNTIMES", "pytorch").split(",")
    if _fd is None or "torch" in sys.modules or "onnxruntime" in sys.modules:
        _off_env()
    else:
        os.register_at_fork(after_in_child=_in_child)
        if "onnxruntime" in _counted:
            sys.meta_path.insert(0, _Watch(_fd, "onnxruntime", _count_ort))
        if "pytorch-int8" in _counted:
            sys.meta_path.insert(0, _Watch(_fd, "torch", _count_int8))
        elif "pytorch" in _counted:
            sys.meta_path.insert(0, _Watch(_fd, "torch", _count))
except Exception:  # never the workload's: it runs uncounted, and passes nothing on
    try:
        _off_env()
    except Exception:
        pass
_chain()  # the environment's own
