# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts and test fixtures that run as root (scripts/package-check.sh,
# scripts/soak.sh, tests/cluster/setup.sh and teardown.sh; docs/security.md, "What root may run"): a working
# directory that no other user can have made, can change or can replace, and unmounting only what
# is really mounted in it. A fixed name in a shared directory (/var/tmp/NAME) is neither: another
# user makes it first, or a link in its place, and root then writes, mounts, unmounts and runs
# whatever she put there.
#
#   private_dir PARENT NAME     prints a new directory PARENT/NAME.XXXXXXXX (mktemp -d: mode 0700,
#                               the caller's, a name nobody can take first)
#   owned_dir DIR               makes DIR (mode 0755; its parent must exist) when it is missing,
#                               or accepts it when it is a real directory of the caller's that
#                               group and others cannot write; prints its path (links above it
#                               resolved); for a state directory reused from run to run
#   owned_dir_check DIR         owned_dir's checks only, for a directory that must exist already
#   unmount_if_mounted PATH     unmounts PATH when it is itself a mount point (never through a
#                               link); for paths inside a private_dir or owned_dir
#   private_dir_done NAME DIR STATUS [MOUNT...]
#                               for an EXIT trap: unmounts each MOUNT that is mounted, then removes
#                               DIR (a private_dir) after a success (STATUS 0), or keeps it for its
#                               logs and says so as NAME
# private_dir and owned_dir first check PARENT (DIR's parent) and every directory above it, with
# their links resolved: each must belong to root or the caller and be writable by nobody else, a
# sticky directory (/tmp, /var/tmp) excepted, where nobody can rename or remove what is not theirs.
# Anything else is refused with status 1 and a message on stderr naming the directory and the fix.

private_dir_refuse() {
  echo "${0##*/}: refusing $1: $2" >&2
  return 1
}

# private_dir_check_above DIR WHAT: DIR (resolved, existing) and each directory above it.
private_dir_check_above() {
  local dir=$1 what=$2 me uid mode owner
  me=$(id -u)
  while :; do
    uid="" mode=""
    read -r uid mode < <(stat -c '%u %a' -- "$dir" 2> /dev/null) || true
    [ -n "$uid" ] || { private_dir_refuse "$what" "cannot stat $dir"; return 1; }
    if [ "$uid" != 0 ] && [ "$uid" != "$me" ]; then
      owner=$(id -nu "$uid" 2> /dev/null || echo "uid $uid")
      private_dir_refuse "$what" "$dir belongs to $owner, who could replace what is made below it (choose a directory of root's, e.g. /var/tmp)"
      return 1
    fi
    if (( (8#$mode & 8#022) != 0 && (8#$mode & 8#1000) == 0 )); then
      private_dir_refuse "$what" "$dir is writable by group or others (mode $mode) without the sticky bit: another user could replace what is made below it (choose another directory, or chmod o-w,g-w $dir)"
      return 1
    fi
    [ "$dir" = / ] && return 0
    dir=$(dirname -- "$dir")
  done
}

private_dir() {
  local parent=$1 name=$2 resolved
  resolved=$(realpath -e -- "$parent" 2> /dev/null) && [ -d "$resolved" ] ||
    { private_dir_refuse "$parent" "it is not an existing directory (make it, or choose another)"; return 1; }
  private_dir_check_above "$resolved" "to work in $parent" || return 1
  mktemp -d -- "$resolved/$name.XXXXXXXX"
}

owned_dir() {
  owned_dir_check "$1" make
}

# owned_dir_check DIR [make]: owned_dir's checks; with `make`, DIR is made first when missing.
owned_dir_check() {
  local dir=$1 make=${2:-} parent resolved uid mode type
  case $dir in /*) ;; *) private_dir_refuse "$dir" "not an absolute path"; return 1 ;; esac
  parent=$(dirname -- "$dir")
  resolved=$(realpath -e -- "$parent" 2> /dev/null) && [ -d "$resolved" ] ||
    { private_dir_refuse "$dir" "$parent is not an existing directory (make it first)"; return 1; }
  private_dir_check_above "$resolved" "$dir" || return 1
  dir=$resolved/$(basename -- "$dir")
  # mkdir never follows a link in its place: it fails, and the checks below name what is there.
  [ -z "$make" ] || mkdir -m 0755 -- "$dir" 2> /dev/null || true
  uid="" mode="" type=""
  read -r uid mode type < <(stat -c '%u %a %F' -- "$dir" 2> /dev/null) || true
  [ -n "$uid" ] || { private_dir_refuse "$dir" "cannot stat it"; return 1; }
  [ "$type" = directory ] ||
    { private_dir_refuse "$dir" "it is a $type, not a directory (someone else's? remove it, or choose another path)"; return 1; }
  [ "$uid" = "$(id -u)" ] ||
    { private_dir_refuse "$dir" "it belongs to $(id -nu "$uid" 2> /dev/null || echo "uid $uid"), not to $(id -nu) (remove it, or choose another path)"; return 1; }
  (( (8#$mode & 8#022) == 0 )) ||
    { private_dir_refuse "$dir" "it is writable by group or others (mode $mode) (chmod go-w it, or choose another path)"; return 1; }
  echo "$dir"
}

unmount_if_mounted() {
  local path=$1
  [ -d "$path" ] && [ ! -L "$path" ] || return 0
  findmnt --mountpoint "$path" > /dev/null 2>&1 || return 0
  umount -l -- "$path"
}

private_dir_done() {
  local name=$1 dir=$2 status=$3 mount
  shift 3
  for mount in "$@"; do unmount_if_mounted "$mount"; done
  if [ "$status" = 0 ]; then
    rm -rf --one-file-system -- "$dir"
  else
    echo "$name: kept $dir for its logs (rm -rf --one-file-system $dir when done)" >&2
  fi
}
