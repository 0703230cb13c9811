# report.sh: sourced by the test VM's /init (tests/vm/run-v2.sh copies it to /edgeprof/report.sh).
# report_exit STATUS: the protocol lines that end a run: "$P exit STATUS", the capture if asked
# for, "$P done". run-v2.sh reads them from the console; a lost "exit" line fails the run
# ("the VM ended without reporting PROGRAM's exit status").
#
# Only echo writes here. init is PID 1 and gets a SIGCHLD whenever an orphan it inherited dies
# (the watchdog's children after kill -9 -1, at any moment). busybox ash installs its handlers
# without SA_RESTART, so a write that the signal interrupts before its first byte fails with
# EINTR: ash's echo retries it, but the printf builtin writes through stdio, which drops its
# buffer and the line with it (CI, 2026-12-06: the exit line of vm-code-patching never arrived;
# tests/vm/test_report.py reproduces it on the host).
report_exit() {
  echo
  echo "$P exit $1"
  echo "EDGEPROF_VM_EXIT=$1"
  if [ "${EDGEPROF_CAPTURE:-0}" = 1 ]; then
    echo "$P capture-begin"
    { tar -C /tmp/capture -czf - . ; echo $? >/tmp/.edgeprof-tar-rc; } | base64
    echo "$P capture-end $(cat /tmp/.edgeprof-tar-rc)"
  fi
  echo "$P done"
}
