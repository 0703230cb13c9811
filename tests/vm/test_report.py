#!/usr/bin/env python3
"""The test VM's last protocol lines (tests/vm/report.sh) survive a SIGCHLD that interrupts them.

The VM's /init is PID 1 under busybox ash, which installs its signal handlers without SA_RESTART,
and it gets a SIGCHLD whenever an orphan it inherited dies. A write blocked on the console when
that signal comes fails with EINTR: ash's echo retries, its printf builtin (stdio) dropped the
line. In CI on 2026-12-06 the "exit" line of vm-code-patching never arrived that way.

Here report_exit runs in busybox ash with its stdout a one-slot packet pipe (O_DIRECT, 4096
bytes), so each line's write blocks until the line before it has been read. Before reading each
line this test waits until the shell is blocked in write(2), signals it, waits until it blocks
again: every line's write that has to wait (each after the first, which finds the pipe
empty) is interrupted once. Needs /bin/busybox (busybox-static), as the VM does.
Exit status 0 when every line arrived.
"""
import fcntl
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUSYBOX = os.environ.get("BUSYBOX", "/bin/busybox")
F_SETPIPE_SZ = 1031
SYS_WRITE = 1  # x86-64; /proc/PID/syscall's first field
WANT = ["", "@@test-nonce exit 7", "EDGEPROF_VM_EXIT=7", "@@test-nonce done"]


def blocked_in_write(pid):
    """True while pid sleeps in write(2) on fd 1; None once it has exited."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            fields = f.read().split()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None
    if state == "Z":
        return None
    return len(fields) > 1 and fields[0] == str(SYS_WRITE) and int(fields[1], 16) == 1


def chld_pending(pid):
    """True while a SIGCHLD sent to pid waits to be delivered; None once it has exited."""
    bit = 1 << (signal.SIGCHLD - 1)
    try:
        with open(f"/proc/{pid}/status") as f:
            masks = {k: int(v, 16) for k, v in (l.split(":\t", 1) for l in f)
                     if k in ("SigPnd", "ShdPnd")}
    except FileNotFoundError:
        return None
    return any(m & bit for m in masks.values())


def wait_until(pred, what, timeout=20.0, required=True):
    """pred()'s first true value (or None); past the timeout an exit naming `what`, or False
    where not `required`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v or v is None:
            return v
        time.sleep(0.005)
    if not required:
        return False
    sys.exit(f"test_report.py: timed out waiting until {what}")


def main():
    if not os.access(BUSYBOX, os.X_OK):
        sys.exit(f"test_report.py: {BUSYBOX} missing (apt-get install busybox-static)")
    r, w = os.pipe2(os.O_DIRECT)
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
    # A background job first, so that ash has its SIGCHLD handler as the VM's init has.
    script = '. "$1"; P=@@test-nonce; : & wait; report_exit 7'
    sh = subprocess.Popen([BUSYBOX, "sh", "-c", script, "sh", os.path.join(HERE, "report.sh")],
                          stdout=w)
    os.close(w)
    got = b""
    interrupted = 0
    while True:
        state = wait_until(lambda: blocked_in_write(sh.pid), "the shell blocks in write(2)")
        if state:  # blocked: interrupt it, let it go back to a blocking write or move on
            os.kill(sh.pid, signal.SIGCHLD)
            # A signal the shell holds blocked for the moment (once in CI, under load, it was
            # still pending 20 s later) is taken after the write this read lets finish: that
            # write is not interrupted, and the line must arrive all the same.
            if wait_until(lambda: chld_pending(sh.pid) is not True, "the shell takes the signal",
                          timeout=5.0, required=False) is not False:
                interrupted += 1
                wait_until(lambda: blocked_in_write(sh.pid), "the shell blocks again")
        chunk = os.read(r, 4096)
        if not chunk:
            break
        got += chunk
    sh.wait()
    lines = got.decode(errors="replace").split("\n")[:-1]
    if lines != WANT:
        sys.exit(f"test_report.py: after {interrupted} interrupted writes the reader got "
                 f"{lines!r}, want {WANT!r}")
    if interrupted == 0:  # nothing tested: each line's write waited out its signal
        sys.exit("test_report.py: no write was interrupted by its signal")
    print(f"test_report.py: {len(WANT)} protocol lines arrived, {interrupted} writes interrupted")


if __name__ == "__main__":
    main()
