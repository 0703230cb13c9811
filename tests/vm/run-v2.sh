#!/usr/bin/env bash
# run-v2.sh: run a host-built program inside a throw-away qemu VM whose
# /sys/fs/cgroup is a pure cgroup2 mount (this host is cgroup v1/hybrid, so
# the v2 backend can only be exercised for real in a VM; see DESIGN.md,
# "Cgroup facts").
#
# Usage: tests/vm/run-v2.sh [--timeout SECONDS] [--capture DIR] [--] PROGRAM [ARGS...]
#
#   --timeout SECONDS  give up after SECONDS of boot+run (default 900); exit 124.
#                      Before that, 60 s earlier (or at half of it when shorter
#                      than 120 s), a watchdog in the VM records every process's
#                      state, kernel wait channel and stack and the slices'
#                      cgroup files, then kills PROGRAM: a hang ends with that
#                      record printed here, and exit 124. Keep a caller's own
#                      timeout (ctest's TIMEOUT) above SECONDS + 100 (the CPU
#                      probe below).
#   --capture DIR      copy whatever PROGRAM wrote to /tmp/capture/ in the VM
#                      into DIR on the host (created if missing)
#
# On a timeout without PROGRAM's status the script prints where the guest's
# CPUs are (qemu's monitor: user space, or which kernel function, or halted;
# a second VM of the same kernel names the functions, EDGEPROF_VM_NO_PROBE=1
# skips that)
# and the watchdog's heartbeats (every 15 s: uptime, load, each process's
# state and wait channel) and record, which it writes to a second serial port
# so that a console that stops taking output cannot silence it.
#
# Exit status: PROGRAM's own status; 124 on timeout; 125 if the VM ended
# without reporting PROGRAM's status (kernel panic, qemu failure, ...) or a
# requested capture could not be brought back; 2 on usage errors.
#
# How it works: a busybox initramfs is built in a temporary directory holding
# PROGRAM, every other executable in PROGRAM's directory (test helpers), the
# shared libraries ldd lists for them, the dynamic loader, /etc/ld.so.cache
# and $EDGEPROF_VM_EXTRA, all at the same absolute paths as on the host so
# compiled-in paths keep working. Its /init mounts cgroup2 at /sys/fs/cgroup,
# enables cpuset cpu io memory pids at the root, creates /runner, puts
# itself there and runs PROGRAM from the host's working directory with
# PATH=/bin:/sbin:/usr/bin HOME=/tmp EDGEPROF_IN_VM=1 EDGEPROF_MEASURE_NN=0 and stdin /dev/null.
# PROGRAM also gets EDGEPROF_TEST_DISK=/mnt/disk: an ext2 filesystem on a
# 64 MiB RAM disk (brd), a real block device for the storage-bandwidth tests
# (io.max), since the initramfs itself has none; the variable is left out,
# with a warning, when the kernel's modules for it are not on the host.
# PROGRAM therefore starts in /runner, a non-root cgroup that also holds the
# init shell (like a login session scope): it must cope with the v2 "no
# internal processes" rule itself. The console is streamed to stdout; /init
# ends with a line EDGEPROF_VM_EXIT=<status> (tests/vm/report.sh) and powers off.
#
# Environment:
#   EDGEPROF_VM_EXTRA   colon-separated extra files/directories to copy in
#                       (same absolute paths; relative ones are taken from
#                       the current directory); symlinks are dereferenced
#   EDGEPROF_VM_KERNEL  kernel image (default: newest /boot/vmlinuz-*)
#   EDGEPROF_VM_NO_PROBE  set: a timeout's CPU samples stay unnamed (no second VM)
#   EDGEPROF_VM_MEMORY  guest memory in MiB (default 1024); a test that emulates a
#                       4 GiB device needs a guest with more than 4 GiB
#   EDGEPROF_VM_RUNNER  "session" (default, described above) or "service":
#                       PROGRAM is alone in /runner, the init shell stays in
#                       the root cgroup (like a systemd Delegate=yes service);
#                       or "user": PROGRAM runs as uid 65534 (nobody) alone in
#                       /user/runner, a cgroup it owns, delegated only cpu,
#                       memory and pids by /user (as systemd's Delegate=yes
#                       gives a user's service: no cpuset, no io), with
#                       EDGEPROF_VM_RUNNER=user in its environment
#
# Needs the Debian packages qemu-system-x86, linux-image-amd64,
# busybox-static and cpio. Guests run under TCG (-accel tcg) because KVM
# guests hang on the CI machines; timings in the VM are slow and noisy. One TCG
# thread runs both guest CPUs (thread=single): with a thread per guest CPU,
# qemu 7.2 kept running code the guest kernel had live-patched (a static
# branch in update_curr, switched as the first CPU quota appears and the last
# goes) and both guest CPUs trapped on the stale int3 forever
# (docs/testing.md, "A VM that stops answering"; tests/vm/guest/).

set -euo pipefail

readonly SELF=${0##*/}
# This script's own directory (report.sh is beside it), through any symlink to it.
SELF_DIR=$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")
readonly SELF_DIR
readonly CONTROLLERS="cpuset cpu io memory pids"
readonly GUEST_PATH=/bin:/sbin:/usr/bin

msg() { printf '%s: %s\n' "$SELF" "$*" >&2; }
die() {
  msg "error: $*"
  exit 125
}
usage_error() {
  msg "$*"
  msg "usage: $SELF [--timeout SECONDS] [--capture DIR] [--] PROGRAM [ARGS...]"
  exit 2
}

# Microseconds since the epoch (EPOCHREALTIME's separator follows the locale).
now_us() { printf '%s' "${EPOCHREALTIME//[!0-9]/}"; }
# Format a microsecond interval as seconds with one decimal.
fmt_secs() { printf '%d.%d' $(($1 / 1000000)) $(($1 % 1000000 / 100000)); }

# Quote a string for a POSIX shell (single quotes; ' becomes '\'').
shquote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# ---------------------------------------------------------------- arguments
timeout=900
capture_dir=
while (($# > 0)); do
  case $1 in
    --timeout)
      (($# >= 2)) || usage_error "--timeout needs a value"
      timeout=$2
      shift 2
      ;;
    --timeout=*)
      timeout=${1#*=}
      shift
      ;;
    --capture)
      (($# >= 2)) || usage_error "--capture needs a directory"
      capture_dir=$2
      shift 2
      ;;
    --capture=*)
      capture_dir=${1#*=}
      shift
      ;;
    -h | --help)
      sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"
      exit 0
      ;;
    --)
      shift
      break
      ;;
    -*) usage_error "unknown option: $1" ;;
    *) break ;;
  esac
done
(($# >= 1)) || usage_error "missing PROGRAM"
if ! [[ $timeout =~ ^[0-9]+$ ]] || ((timeout == 0)); then
  usage_error "--timeout wants a positive number of seconds, not '$timeout'"
fi
if ((timeout >= 120)); then watchdog=$((timeout - 60)); else watchdog=$((timeout / 2)); fi
[[ -z $capture_dir || ! -e $capture_dir || -d $capture_dir ]] ||
  usage_error "--capture: '$capture_dir' exists and is not a directory"

runner_layout=${EDGEPROF_VM_RUNNER:-session}
[[ $runner_layout == session || $runner_layout == service || $runner_layout == user ]] ||
  usage_error "EDGEPROF_VM_RUNNER must be 'session', 'service' or 'user', not '$runner_layout'"

program=$1
shift
if [[ $program != */* ]]; then
  resolved=$(type -P -- "$program") || die "PROGRAM '$program' not found in PATH"
  program=$resolved
fi
program=$(realpath -ms -- "$program") # absolute, symlinks kept
[[ -f $program && -x $program ]] || die "PROGRAM '$program' is not an executable file"

# ------------------------------------------------------------ prerequisites
missing_pkg() { die "$1 not found: install the Debian package $2 (apt-get install $2)"; }
for tool in qemu-system-x86_64:qemu-system-x86 cpio:cpio gzip:gzip ldd:libc-bin \
  tar:tar base64:coreutils realpath:coreutils od:coreutils find:findutils mkfifo:coreutils; do
  command -v "${tool%%:*}" >/dev/null || missing_pkg "${tool%%:*}" "${tool#*:}"
done

busybox=/bin/busybox # busybox-static installs it here
[[ -x $busybox ]] || missing_pkg "$busybox" busybox-static
# The dynamic 'busybox' package also installs /bin/busybox; we need a static one.
if bb_ldd=$(LC_ALL=C ldd "$busybox" 2>&1) && [[ $bb_ldd != *'statically linked'* ]]; then
  die "$busybox is dynamically linked: install the Debian package busybox-static"
fi

if [[ -n ${EDGEPROF_VM_KERNEL:-} ]]; then
  kernel=$EDGEPROF_VM_KERNEL
else
  kernel=$(find /boot -maxdepth 1 -name 'vmlinuz-*' -print 2>/dev/null | sort -V | tail -n 1)
  [[ -n $kernel ]] || missing_pkg "a kernel image (/boot/vmlinuz-*)" linux-image-amd64
fi
[[ -r $kernel ]] || die "cannot read kernel image '$kernel' (needs read permission; package linux-image-amd64)"

# ------------------------------------------------------------ temp + traps
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edgeprof-vm.XXXXXX")
qemu_pid=

# shellcheck disable=SC2317 # called through the trap below
stop_vm() {
  if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
    kill -TERM "$qemu_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
      kill -0 "$qemu_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
  fi
  qemu_pid=
}
# shellcheck disable=SC2317 # called through the trap below
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  stop_vm
  rm -rf -- "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'msg "interrupted"; exit 130' INT
trap 'msg "terminated"; exit 143' TERM
trap 'msg "hangup"; exit 129' HUP

root=$tmp/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,etc,edgeprof}

# --------------------------------------------------------------- initramfs
# Everything is copied dereferenced into real directories, so the tree holds
# no symlinks (which could point back into the host) until the busybox
# applet links are added at the very end.
declare -A copied=()
copy_in() { # copy_in ABSOLUTE-PATH
  local src=$1 dst
  [[ -z ${copied[$src]:-} ]] || return 0
  copied[$src]=1
  dst=$root$src
  mkdir -p -- "${dst%/*}"
  if [[ -d $src ]]; then
    mkdir -p -- "$dst"
    cp -RL --preserve=mode,timestamps -- "$src/." "$dst/"
  else
    cp -L --preserve=mode,timestamps -- "$src" "$dst"
  fi
}

is_elf() { [[ $(head -c 4 -- "$1" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]]; }

# Copy the shared libraries (and loader) that ldd lists for an ELF file.
# STRICT=1: a library ldd cannot find is fatal (PROGRAM would not start).
copy_libs() { # copy_libs FILE STRICT
  local bin=$1 strict=$2 out line lib
  if ! out=$(LC_ALL=C ldd -- "$bin" 2>&1); then
    [[ $out == *'not a dynamic executable'* ]] && return 0
    if ((strict)); then die "ldd failed on $bin: $out"; fi
    msg "warning: ldd failed on $bin, not copying its libraries"
    return 0
  fi
  while IFS= read -r line; do
    line=${line#"${line%%[![:space:]]*}"}
    case $line in
      *' => not found'*)
        if ((strict)); then die "$bin needs ${line%% *}, which ldd cannot find"; fi
        msg "warning: $bin needs ${line%% *}, which ldd cannot find"
        continue
        ;;
      *' => /'*) lib=${line#* => } ;;
      /*) lib=$line ;;
      *) continue ;; # linux-vdso.so.1, "statically linked"
    esac
    copy_in "${lib% (0x*)}"
  done <<<"$out"
}

copy_binary() { # copy_binary ABSOLUTE-PATH STRICT
  local bin=$1 strict=$2 first interp
  copy_in "$bin"
  if is_elf "$bin"; then
    copy_libs "$bin" "$strict"
  elif [[ $(head -c 2 -- "$bin") == '#!' ]]; then
    # Script: bring its interpreter too, unless busybox provides it.
    first=$(head -n 1 -- "$bin")
    interp=${first#\#!}
    interp=${interp#"${interp%%[![:space:]]*}"}
    interp=${interp%%[[:space:]]*}
    case $interp in
      /bin/sh | /usr/bin/env | /bin/busybox | '') ;;
      /*) if [[ -x $interp ]]; then copy_binary "$interp" 0; fi ;;
    esac
  fi
}

build_start=$(now_us)
copy_binary "$program" 1

progdir=${program%/*}
case ${progdir:-/} in
  / | /bin | /sbin | /usr/bin | /usr/sbin | /usr/local/bin | /usr/local/sbin)
    msg "note: $progdir is a system directory, not copying its other executables"
    ;;
  *)
    while IFS= read -r -d '' sibling; do
      copy_binary "$(realpath -ms -- "$sibling")" 0
    done < <(find -L "$progdir" -mindepth 1 -maxdepth 1 -type f -executable -print0)
    ;;
esac

if [[ -n ${EDGEPROF_VM_EXTRA:-} ]]; then
  IFS=: read -r -a extras <<<"$EDGEPROF_VM_EXTRA"
  for extra in "${extras[@]}"; do
    [[ -n $extra ]] || continue
    [[ -e $extra ]] || die "EDGEPROF_VM_EXTRA: '$extra' does not exist"
    copy_in "$(realpath -ms -- "$extra")"
  done
fi

# Library paths resolved through the host's ld.so.cache resolve the same way
# in the VM (all copied libraries sit at their host paths).
if [[ -f /etc/ld.so.cache ]]; then copy_in /etc/ld.so.cache; fi

cwd=$(pwd)
mkdir -p -- "$root$cwd"
# /init mounts a tmpfs on /tmp, which would hide anything copied under /tmp
# (a PROGRAM or cwd there): stage it aside for /init to copy back.
if [[ -n $(find "$root/tmp" -mindepth 1 -maxdepth 1 -print -quit) ]]; then
  mv -- "$root/tmp" "$root/edgeprof/tmp-seed"
  mkdir -- "$root/tmp"
fi
cp -- "$busybox" "$root/bin/busybox"

# A block device for the storage tests: brd (a RAM disk) and ext4 (which mounts ext2; crc32c for
# its checksums), from the kernel's modules on the host, loaded by /init in this order.
kver=${kernel##*/vmlinuz-}
disk_modules="drivers/block/brd.ko crypto/crc32c_generic.ko lib/crc16.ko fs/mbcache.ko"
disk_modules+=" fs/jbd2/jbd2.ko fs/ext4/ext4.ko"
have_disk=1
mkdir -p "$root/edgeprof/modules"
for m in $disk_modules; do
  if [[ -f /lib/modules/$kver/kernel/$m ]]; then
    cp -- "/lib/modules/$kver/kernel/$m" "$root/edgeprof/modules/"
  else
    have_disk=0
  fi
done
if ((!have_disk)); then
  msg "warning: /lib/modules/$kver lacks the modules for a disk ($disk_modules):" \
    "the VM has no EDGEPROF_TEST_DISK"
  disk_modules=
fi

nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
{
  printf '# generated by %s\n' "$SELF"
  printf 'EDGEPROF_NONCE=%s\n' "$(shquote "$nonce")"
  printf 'EDGEPROF_CWD=%s\n' "$(shquote "$cwd")"
  printf 'EDGEPROF_CAPTURE=%s\n' "$([[ -n $capture_dir ]] && echo 1 || echo 0)"
  printf 'EDGEPROF_RUNNER=%s\n' "$runner_layout"
  printf 'EDGEPROF_WATCHDOG=%s\n' "$watchdog"
  printf 'EDGEPROF_CONTROLLERS=%s\n' "$(shquote "$CONTROLLERS")"
  printf 'EDGEPROF_GUEST_PATH=%s\n' "$(shquote "$GUEST_PATH")"
  printf 'EDGEPROF_DISK_MODULES=%s\n' "$(shquote "$disk_modules")"
  printf 'set --'
  for arg in "$program" "$@"; do printf ' %s' "$(shquote "$arg")"; done
  printf '\n'
} >"$root/edgeprof/config.sh"
cp -- "$SELF_DIR/report.sh" "$root/edgeprof/report.sh"

# Protocol lines start with "@@<nonce> " so PROGRAM's output cannot fake them.
cat >"$root/init" <<'INIT'
#!/bin/busybox sh
# /init of the edgeprof cgroup v2 test VM (generated by tests/vm/run-v2.sh).
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
. /edgeprof/config.sh
P="@@$EDGEPROF_NONCE"
echo "$P booted"

mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs -o nosuid devtmpfs /dev
# What udev/systemd create on a real system: programs open /dev/stderr by name.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /dev/shm /dev/pts
mount -t tmpfs -o nosuid,nodev tmpfs /dev/shm
mount -t tmpfs -o nosuid,nodev tmpfs /tmp
if [ -d /edgeprof/tmp-seed ]; then
  cp -a /edgeprof/tmp-seed/. /tmp/ && rm -rf /edgeprof/tmp-seed
fi
mount -t tmpfs -o nosuid,nodev tmpfs /run
# Same options as systemd uses for the unified hierarchy.
mount -t cgroup2 -o nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot \
  cgroup2 /sys/fs/cgroup ||
  mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup ||
  echo "edgeprof-vm: WARNING: cannot mount cgroup2 at /sys/fs/cgroup"

cg=/sys/fs/cgroup
available=" $(cat $cg/cgroup.controllers 2>/dev/null) "
for c in $EDGEPROF_CONTROLLERS; do
  case $available in
    *" $c "*) echo "+$c" >$cg/cgroup.subtree_control ||
      echo "edgeprof-vm: WARNING: cannot enable controller $c at the root" ;;
    *) echo "edgeprof-vm: WARNING: controller $c is not available" ;;
  esac
done
mkdir -p $cg/runner /tmp/capture
echo "edgeprof-vm: kernel $(uname -r), $(nproc) CPUs;" \
  "root cgroup.controllers: $(cat $cg/cgroup.controllers);" \
  "subtree_control: $(cat $cg/cgroup.subtree_control); PROGRAM runs in /runner ($EDGEPROF_RUNNER)"

# The test disk: a RAM disk (a real block device, which io.max can limit) with ext2 on it.
disk_env=
if [ -n "$EDGEPROF_DISK_MODULES" ]; then
  disk_ok=1
  for m in $EDGEPROF_DISK_MODULES; do
    case $m in
      */brd.ko) insmod "/edgeprof/modules/${m##*/}" rd_nr=1 rd_size=65536 || disk_ok=0 ;;
      *) insmod "/edgeprof/modules/${m##*/}" || disk_ok=0 ;;
    esac
  done
  mkdir -p /mnt/disk
  if [ $disk_ok = 1 ] && mke2fs -F -m 0 /dev/ram0 >/dev/null 2>&1 &&
    mount -t ext2 /dev/ram0 /mnt/disk; then
    disk_env="EDGEPROF_TEST_DISK=/mnt/disk"
  else
    echo "edgeprof-vm: WARNING: no test disk (loading brd/ext4 or mke2fs failed)"
  fi
fi

cd "$EDGEPROF_CWD" || echo "edgeprof-vm: WARNING: cannot cd to $EDGEPROF_CWD"
# The watchdog (--timeout) writes to the second serial port (/dev/ttyS1, a file on the host), not
# to the console, so that a console that stops taking output cannot silence it: every 15 s a
# heartbeat (uptime, load, the state and wait channel of every process outside the root cgroup),
# then, EDGEPROF_WATCHDOG s after the VM's start (as the host counts --timeout), what every process
# waits on and the slices' state, then PROGRAM killed (kill -1 spares init and the caller). The
# kill comes at most 20 s after the record begins, whether or not the record (which may block on a
# lock the hung process holds) has finished. The host prints the file when a run times out.
if [ "${EDGEPROF_WATCHDOG:-0}" -gt 0 ] && [ -c /dev/ttyS1 ]; then
  (
    exec >/dev/ttyS1 2>&1
    stty -F /dev/ttyS1 raw -echo 2>/dev/null
    while :; do
      up=
      read -r up _ </proc/uptime 2>/dev/null
      up=${up%%.*}
      if ! [ "$up" -ge 0 ] 2>/dev/null; then sleep 15; continue; fi
      [ "$up" -lt "$EDGEPROF_WATCHDOG" ] || break
      # The scan reads /proc/PID/cgroup, which waits on the kernel's cgroup lock: in the
      # background, so that a PROGRAM hung holding that lock cannot hold up the deadline.
      (
        procs=
        for d in /proc/[0-9]*; do
          read -r pid comm state ppid _ 2>/dev/null <"$d/stat" || continue
          [ "$pid" = 2 ] || [ "$ppid" = 2 ] && continue
          c=$(cat "$d/cgroup" 2>/dev/null)
          [ "$c" = "0::/" ] && continue
          procs="$procs $pid$comm:$state:$(cat "$d/wchan" 2>/dev/null)"
        done
        echo "heartbeat: up $up s, load $(cat /proc/loadavg);$procs"
      ) &
      left=$((EDGEPROF_WATCHDOG - up))
      [ "$left" -le 15 ] || left=15
      sleep "$left"
    done
    (
      echo "edgeprof-vm: WATCHDOG: PROGRAM still running after $EDGEPROF_WATCHDOG s;" \
        "every process but the kernel's threads (state, wait channel, each thread's stack):"
      for d in /proc/[0-9]*; do
        read -r pid comm state ppid _ 2>/dev/null <"$d/stat" || continue
        [ "$pid" = 2 ] || [ "$ppid" = 2 ] && continue
        echo "  pid $pid $comm state $state ppid $ppid" \
          "uid $(awk '/^Uid:/ {print $2}' "$d/status" 2>/dev/null)" \
          "wchan $(cat "$d/wchan" 2>/dev/null) cgroup $(cat "$d/cgroup" 2>/dev/null)"
        for t in "$d"/task/*; do
          read -r tid tcomm tstate _ 2>/dev/null <"$t/stat" || continue
          echo "    thread $tid $tcomm state $tstate wchan $(cat "$t/wchan" 2>/dev/null)"
          sed 's/^/      /' "$t/stack" 2>/dev/null
        done
      done
      echo "edgeprof-vm: WATCHDOG: command lines:"
      for d in /proc/[0-9]*; do
        read -r pid _ _ ppid _ 2>/dev/null <"$d/stat" || continue
        [ "$pid" = 2 ] || [ "$ppid" = 2 ] && continue
        echo "  pid $pid: $(tr '\0' ' ' 2>/dev/null <"$d/cmdline" | cut -c1-160)"
      done
      echo "edgeprof-vm: WATCHDOG: the slices' cgroups:"
      find /sys/fs/cgroup -type d -path '*edgeprof*' 2>/dev/null | while read -r c; do
        echo "  $c"
        for f in cgroup.procs cgroup.threads cgroup.type cgroup.freeze cgroup.events cpu.max \
          cpu.stat memory.max memory.events pids.max; do
          [ -r "$c/$f" ] && echo "    $f: $(tr '\n' ' ' 2>/dev/null <"$c/$f")"
        done
      done
      echo "edgeprof-vm: WATCHDOG: the console's tty (ttyS0):"
      sed 's/^/  /' /proc/tty/driver/serial 2>/dev/null
    ) &
    dump=$!
    n=0
    while [ $n -lt 20 ] && kill -0 "$dump" 2>/dev/null; do
      sleep 1
      n=$((n + 1))
    done
    echo "$P watchdog"
    echo "edgeprof-vm: WATCHDOG: killing PROGRAM"
    kill -9 -1
  ) &
  watchdog_pid=$!
fi
if [ "$EDGEPROF_RUNNER" = service ]; then
  # PROGRAM alone in /runner; the init shell stays in the root cgroup.
  /bin/busybox sh -c 'echo $$ >/sys/fs/cgroup/runner/cgroup.procs && exec "$@"' sh \
    env -i PATH="$EDGEPROF_GUEST_PATH" HOME=/tmp EDGEPROF_IN_VM=1 EDGEPROF_MEASURE_NN=0 $disk_env "$@" </dev/null
  status=$?
elif [ "$EDGEPROF_RUNNER" = user ]; then
  # Like systemd's Delegate=yes for a user's service: nobody owns /user/runner (the directory
  # and the three files a delegation hands over), and /user passes it cpu, memory and pids only.
  grep -q '^nobody:' /etc/passwd 2>/dev/null ||
    echo 'nobody:x:65534:65534:nobody:/tmp:/bin/sh' >>/etc/passwd
  grep -q '^nogroup:' /etc/group 2>/dev/null || echo 'nogroup:x:65534:' >>/etc/group
  mkdir -p $cg/user/runner
  for c in cpu memory pids; do
    echo "+$c" >$cg/user/cgroup.subtree_control ||
      echo "edgeprof-vm: WARNING: cannot delegate controller $c"
  done
  chown 65534:65534 $cg/user/runner $cg/user/runner/cgroup.procs \
    $cg/user/runner/cgroup.subtree_control $cg/user/runner/cgroup.threads
  echo "edgeprof-vm: PROGRAM runs as nobody in /user/runner, delegated:" \
    "$(cat $cg/user/runner/cgroup.controllers)"
  /bin/busybox sh -c 'echo $$ >/sys/fs/cgroup/user/runner/cgroup.procs &&
    exec su -s /bin/sh -c "exec \"\$@\"" -- nobody sh "$@"' sh \
    env -i PATH="$EDGEPROF_GUEST_PATH" HOME=/tmp EDGEPROF_IN_VM=1 EDGEPROF_MEASURE_NN=0 \
    EDGEPROF_VM_RUNNER=user $disk_env "$@" </dev/null
  status=$?
else
  # Like a login session scope: the init shell and PROGRAM share /runner.
  echo $$ >$cg/runner/cgroup.procs
  env -i PATH="$EDGEPROF_GUEST_PATH" HOME=/tmp EDGEPROF_IN_VM=1 EDGEPROF_MEASURE_NN=0 $disk_env "$@" </dev/null
  status=$?
fi

[ -z "${watchdog_pid:-}" ] || kill -9 "$watchdog_pid" 2>/dev/null
# Keep kernel messages (and leftover children) out of the protocol lines.
dmesg -n 1
kill -9 -1 2>/dev/null
. /edgeprof/report.sh
report_exit "$status"
stty onlcr 2>/dev/null # tcsetattr(TCSADRAIN): wait until the UART has sent it all
poweroff -f
INIT
chmod 755 "$root/init"

# Busybox applets, only where nothing was copied.
while IFS= read -r applet; do
  [[ -e $root/$applet || -L $root/$applet ]] && continue
  mkdir -p -- "$(dirname -- "$root/$applet")"
  ln -s /bin/busybox "$root/$applet"
done < <("$busybox" --list-full)

(cd "$root" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) |
  gzip -1 >"$tmp/initrd.gz"
rm -rf -- "$root"
msg "initramfs: ${#copied[@]} host files, $(($(stat -c %s "$tmp/initrd.gz") / 1024)) KiB," \
  "built in $(fmt_secs $(($(now_us) - build_start))) s; kernel ${kernel}"

# --------------------------------------------------------------------- boot
fifo=$tmp/console
mkfifo "$fifo"
vm_start=$(now_us)
# stdin is /dev/null: the VM never reads it, and qemu leaves the terminal alone.
# ttyS1 (a file here) takes the watchdog's heartbeat and record; the monitor, on two fifos, lets a
# timeout ask qemu where the guest's CPUs are (nokaslr: their addresses match System.map).
mkfifo "$tmp/monitor.in" "$tmp/monitor.out"
: >"$tmp/watchdog.txt"
qemu-system-x86_64 -accel tcg,thread=single -cpu max -m "${EDGEPROF_VM_MEMORY:-1024}" -smp 2 \
  -nodefaults -display none -no-reboot \
  -chardev stdio,id=console,signal=off -serial chardev:console \
  -chardev file,id=watchdog,path="$tmp/watchdog.txt" -serial chardev:watchdog \
  -chardev pipe,id=monitor,path="$tmp/monitor" -mon chardev=monitor,mode=readline \
  -kernel "$kernel" -initrd "$tmp/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1 nokaslr" \
  </dev/null >"$fifo" &
qemu_pid=$!
# Both ends held open read-write: neither open nor a write blocks if qemu has died.
exec {monitor_in}<>"$tmp/monitor.in" {monitor_out}<>"$tmp/monitor.out"

# Print the watchdog's file (heartbeats, and its record if it fired), indented.
print_watchdog_file() {
  [[ -s $tmp/watchdog.txt ]] || {
    msg "the VM's watchdog wrote nothing (no heartbeat: its shell never ran after boot)"
    return 0
  }
  msg "the VM's watchdog (ttyS1):"
  tr -d '\r' <"$tmp/watchdog.txt" | sed -e "/^@@$nonce /d" -e 's/^/  /' | tail -n 400
}

# Ask qemu's monitor where each guest CPU is, five times about half a second apart: halted (idle,
# waiting for an interrupt) or running, in the kernel (CPL 0) or in user space (CPL 3). Prints the
# samples; leaves the kernel addresses in kernel_addrs for name_kernel_addresses.
kernel_addrs=()
sample_cpus() {
  local i line cpu=
  msg "qemu monitor, the guest's CPUs (5 samples about 0.5 s apart; CPL=0: in the kernel," \
    "CPL=3: in user space; HLT=1: idle, waiting for an interrupt):"
  for ((i = 0; i < 5; i++)); do
    printf 'info registers -a\n' >&"$monitor_in" || return 0
    sleep 0.2
    while IFS= read -r -t 0.3 -u "$monitor_out" line; do
      line=${line//$'\r'/}
      if [[ $line =~ ^CPU#([0-9]+) ]]; then cpu=${BASH_REMATCH[1]}; fi
      [[ $line =~ ^RIP=([0-9a-f]+)\ .*(CPL=[0-9]).*(HLT=[01]) ]] || continue
      printf '  sample %d: CPU %s RIP %s %s %s\n' "$i" "$cpu" "${BASH_REMATCH[@]:1:3}"
      [[ ${BASH_REMATCH[2]} != CPL=0 ]] || kernel_addrs+=("${BASH_REMATCH[1]}")
    done
  done
}

# Name the sampled kernel addresses: a second VM of the same kernel (nokaslr: the same addresses)
# reads its /proc/kallsyms, since Debian's /boot/System.map is a placeholder. That VM's own
# --timeout bounds it, and it probes nothing itself (EDGEPROF_VM_NO_PROBE).
name_kernel_addresses() {
  ((${#kernel_addrs[@]} > 0)) && [[ -z ${EDGEPROF_VM_NO_PROBE:-} ]] || return 0
  mkdir -p "$tmp/symbols"
  cat >"$tmp/symbols/resolve" <<'RESOLVE'
#!/bin/sh
for pc in "$@"; do
  awk -v pc="$pc" '$1 <= pc && $1 > best { best = $1; name = $3 } END { print "@sym", pc, name }' \
    /proc/kallsyms
done
RESOLVE
  chmod 755 "$tmp/symbols/resolve"
  msg "the sampled kernel addresses (read from /proc/kallsyms in a second VM of the same kernel):"
  EDGEPROF_VM_NO_PROBE=1 EDGEPROF_VM_RUNNER=session EDGEPROF_VM_EXTRA='' EDGEPROF_VM_KERNEL=$kernel \
    "$BASH" "$0" --timeout 90 "$tmp/symbols/resolve" \
    $(printf '%s\n' "${kernel_addrs[@]}" | sort -u) 2>/dev/null |
    sed -n 's/^@sym \([0-9a-f]*\) \(.*\)\r*$/  \1 = \2/p' || true
}

status=
booted_us=
in_capture=0
capture_done=0
capture_tar_rc=
capture_fd=
panic=0
timed_out=0
watchdog_fired=0
deadline=$((SECONDS + timeout))

handle_line() {
  local line=${1%$'\r'} word rest
  if [[ $line == "@@$nonce "* ]]; then
    read -r _ word rest <<<"$line"
    case $word in
      booted)
        booted_us=$(now_us)
        msg "VM booted in $(fmt_secs $((booted_us - vm_start))) s"
        ;;
      exit) status=$rest ;;
      capture-begin)
        in_capture=1
        exec {capture_fd}>"$tmp/capture.b64"
        ;;
      capture-end)
        in_capture=0
        capture_done=1
        capture_tar_rc=$rest
        exec {capture_fd}>&-
        ;;
      done) # allow a little time to power off, then stop waiting
        if ((deadline > SECONDS + 30)); then deadline=$((SECONDS + 30)); fi
        ;;
    esac
    return 0
  fi
  if ((in_capture)) && [[ $line =~ ^[A-Za-z0-9+/=]*$ ]]; then
    printf '%s\n' "$line" >&"$capture_fd"
    return 0
  fi
  [[ $line != *'Kernel panic'* ]] || panic=1
  printf '%s\n' "$line"
}

while :; do
  remaining=$((deadline - SECONDS))
  if ((remaining <= 0)); then
    timed_out=1
    break
  fi
  line=
  if IFS= read -r -t "$remaining" line; then
    handle_line "$line"
  else
    rc=$?
    [[ -z $line ]] || handle_line "$line"
    if ((rc > 128)); then timed_out=1; fi
    break # timeout or end of console output (qemu exited)
  fi
done <"$fifo"

end_us=$(now_us)
if grep -q "^@@$nonce watchdog" "$tmp/watchdog.txt" 2>/dev/null; then watchdog_fired=1; fi
if ((timed_out)) && [[ -z $status ]]; then
  msg "TIMEOUT: no result after ${timeout} s (--timeout)"
  sample_cpus
  print_watchdog_file
  msg "killing the VM"
  stop_vm
  name_kernel_addresses
  exit 124
fi
qemu_rc=0
if ((timed_out)); then
  kill -TERM "$qemu_pid" 2>/dev/null || true
fi
wait "$qemu_pid" || qemu_rc=$?
qemu_pid=

timing="boot+run took $(fmt_secs $((end_us - vm_start))) s"
[[ -z $booted_us ]] || timing+=" (boot $(fmt_secs $((booted_us - vm_start))) s)"
msg "$timing"

if [[ -z $status ]]; then
  reason="qemu exit status $qemu_rc"
  ((!panic)) || reason="kernel panic; $reason"
  die "the VM ended without reporting PROGRAM's exit status ($reason)"
fi

if [[ -n $capture_dir ]]; then
  if ((!capture_done)); then
    die "PROGRAM exited with $status but the capture did not arrive complete"
  fi
  [[ $capture_tar_rc == 0 ]] ||
    die "PROGRAM exited with $status but tar failed in the VM (status $capture_tar_rc)"
  mkdir -p -- "$capture_dir"
  base64 -d <"$tmp/capture.b64" | tar -xzf - -C "$capture_dir" --no-same-owner ||
    die "PROGRAM exited with $status but the capture could not be unpacked into $capture_dir"
  nfiles=$(base64 -d <"$tmp/capture.b64" | tar -tzf - | grep -vc '/$' || true)
  msg "captured ${nfiles:-0} files into $capture_dir"
fi

if ((watchdog_fired)); then
  print_watchdog_file
  msg "TIMEOUT: PROGRAM was still running $watchdog s after the VM's start; the watchdog" \
    "printed its state above and killed it (PROGRAM's status $status)"
  exit 124
fi
msg "PROGRAM exit status: $status"
exit "$status"
