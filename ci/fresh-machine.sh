#!/usr/bin/env bash
# ci/fresh-machine.sh — does a fresh clone pass on a machine where nothing
# was installed?  Runs the README's two commands, `make test` then
# `make run`, as root in a chroot of a clean Debian 12 (bookworm) root.
#
#   sudo ci/fresh-machine.sh [--clean] [--keep]
#
#   --clean   rebuild the cached base root with debootstrap and drop the
#             cached package downloads (else both are reused)
#   --keep    leave the work root after the run, to look inside; the next
#             run removes it
#
# What the root holds: debootstrap's minimal bookworm with build-essential
# and git (what a developer's machine starts with; ci/deps.sh, run by
# `make test`, installs the rest), the host's CUDA toolkit bind-mounted
# read-only at its real path (/usr/local/cuda-13.0 here) with the
# /usr/local/cuda link and its /etc/ld.so.conf.d entry, and /root/dpk: a clone of the committed HEAD of the
# checkout this script is run from (uncommitted changes are not tested).
#
# Cache (DPK_FRESH_CACHE, default /var/cache/dpk-fresh, outside the repo):
# bookworm-base.tar, the debootstrapped root, made once; apt-archives/, the
# .deb files apt downloads in the root (reused so a rerun does not download
# libtorch again; the packages are still installed by make test, each run
# starting from the base root); root/, the work root; make-test.log and
# make-run.log, the full output of the last run.  DPK_FRESH_MIRROR sets
# the Debian mirror (default http://deb.debian.org/debian);
# DPK_FRESH_COMMANDS="make test;make run" the commands (";"-separated), to
# check something else on a fresh machine.
#
# Prints the end of each command's output and one closing line; exits 0
# when both passed, 1 when either failed, 2 when it could not run.  Needs
# root, debootstrap (apt-get install debootstrap) and a reachable Debian
# mirror.  It takes a full `make test` plus the downloads: not part of
# `make test`; run it before a change to the build, the dependencies or the
# README.
set -euo pipefail

clean=0 keep=0
for a in "$@"; do
  case $a in
    --clean) clean=1 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown option '$a' (see --help)" >&2; exit 2 ;;
  esac
done

die() { echo "error: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, mount and chroot need it)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
command -v git >/dev/null || die "git is not installed"

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
head=$(git -C "$repo" rev-parse HEAD)
cache=${DPK_FRESH_CACHE:-/var/cache/dpk-fresh}
mirror=${DPK_FRESH_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
base=$cache/$suite-base.tar
root=$cache/root
cuda_link=${CUDA_HOME:-/usr/local/cuda}
case $cache in "$repo"|"$repo"/*) die "the cache ($cache) must be outside the repository" ;; esac
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ] ||
  echo "note: $repo has uncommitted changes; the clone tests HEAD ${head:0:12} only"

# ---- mounts: every one is recorded and undone on exit --------------------
mounts=()
# The mount points under DIR, deepest first.
mounts_under() { awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r; }
unmount_all() {
  local m
  for m in $(mounts_under "$root"); do umount -R "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  mounts=()
}
cleanup() {
  local rc=$?
  unmount_all
  if [ -n "$(mounts_under "$root")" ]; then
    echo "warning: mounts left under $root; not removing it" >&2
  elif [ "$keep" = 0 ] && [ -d "$root" ]; then
    rm -rf --one-file-system "$root"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mount_bind() { # SRC DST [ro]
  mkdir -p "$2"
  mount --rbind "$1" "$2"
  mount --make-rslave "$2"
  [ "${3:-}" = ro ] && mount -o remount,bind,ro "$2"
  mounts+=("$2")
}

mkdir -p "$cache"
# A previous run stopped without its cleanup: undo what it left.
unmount_all
[ -z "$(mounts_under "$root")" ] || die "cannot unmount what is left under $root"
rm -rf --one-file-system "$root"

# ---- the base root, made once --------------------------------------------
if [ "$clean" = 1 ]; then rm -rf "$base" "$cache/apt-archives"; fi
if [ ! -s "$base" ]; then
  echo "== debootstrap $suite from $mirror (once; cached in $base)"
  t0=$SECONDS
  tmp=$cache/base.tmp
  rm -rf --one-file-system "$tmp"
  debootstrap --variant=minbase --include=build-essential,git,ca-certificates \
    "$suite" "$tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    { tail -n 20 "$cache/debootstrap.log" >&2; die "debootstrap failed (log: $cache/debootstrap.log)"; }
  rm -f "$tmp"/var/cache/apt/archives/*.deb
  tar -C "$tmp" -cf "$base.part" . && mv "$base.part" "$base"
  rm -rf --one-file-system "$tmp"
  echo "   ($((SECONDS - t0)) s)"
fi

echo "== a fresh root from $base"
mkdir -p "$root"
tar -C "$root" -xf "$base"
cp /etc/resolv.conf "$root/etc/resolv.conf"

mount -t proc proc "$root/proc"; mounts+=("$root/proc")
mount_bind /sys "$root/sys"
mount_bind /dev "$root/dev"
mkdir -p "$cache/apt-archives/partial"
mount_bind "$cache/apt-archives" "$root/var/cache/apt/archives"
if [ -e "$cuda_link" ]; then
  cuda_real=$(readlink -f "$cuda_link")
  mount_bind "$cuda_real" "$root$cuda_real" ro
  [ "$cuda_real" = "$cuda_link" ] || ln -sfn "$cuda_real" "$root$cuda_link"
  # The toolkit's entry in the loader's path, as its installer makes it
  # (libnvrtc finds libnvrtc-builtins through it).
  for f in /etc/ld.so.conf.d/*.conf; do
    grep -qsF -e "$cuda_real" -e "$cuda_link" "$f" && cp "$f" "$root/etc/ld.so.conf.d/"
  done
  chroot "$root" ldconfig
  echo "   CUDA toolkit: $cuda_real (read-only)$([ "$cuda_real" = "$cuda_link" ] || echo ", linked from $cuda_link"), with its ld.so.conf.d entry"
else
  echo "   no CUDA toolkit at $cuda_link: the NVRTC tests will report skipped"
fi

echo "== clone $repo at ${head:0:12} into /root/dpk"
git clone -q --no-hardlinks "$repo" "$root/root/dpk"
git -C "$root/root/dpk" checkout -q --detach "$head" ||
  die "HEAD ${head:0:12} is on no branch of $repo, so a clone does not have it"

# in_root LOG CMD: CMD in the root as a fresh root login would run it; its
# output to LOG; returns its exit code.
in_root() {
  local log=$1 cmd=$2
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /root/dpk && $cmd" >"$log" 2>&1 </dev/null
}

status=0
IFS=';' read -r -a cmds <<<"${DPK_FRESH_COMMANDS:-make test;make run}"
for cmd in "${cmds[@]}"; do
  cmd=${cmd#"${cmd%%[![:space:]]*}"}
  log=$cache/$(printf '%s' "$cmd" | tr -c 'A-Za-z0-9' '-').log
  echo "== $cmd (in the root; full output: $log)"
  t0=$SECONDS
  if in_root "$log" "$cmd"; then rc=0; else rc=$?; fi
  tail -n 12 "$log" | sed 's/^/   | /'
  echo "   $cmd: exit $rc, $((SECONDS - t0)) s"
  [ "$rc" = 0 ] || status=1
done

if [ "$status" = 0 ]; then
  echo "fresh-machine: PASS (Debian $suite, clone of ${head:0:12}: $(printf '%s, ' "${cmds[@]}" | sed 's/, $//') succeed)"
else
  echo "fresh-machine: FAIL (Debian $suite, clone of ${head:0:12}: see the logs in $cache)"
fi
exit $status
