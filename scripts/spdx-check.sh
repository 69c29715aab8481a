#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The SPDX licence line of every source file of the tree (LICENSE: Apache-2.0).
#   bash scripts/spdx-check.sh [DIR]        lists each source without the line; exit 1 if any
#   bash scripts/spdx-check.sh --add [DIR]  adds the line where it is missing, then checks
# DIR is a git checkout (default: this one); its tracked files are what is checked. A source is
# code or build text dlx's authors wrote: C, C++, CUDA, protobuf, JavaScript and CSS, Python, shell,
# Lua, CMake, and the executable scripts without a suffix (tools/cluster/dlx-cluster). Not data
# (YAML, journals, HDF5, fuzz corpora, the Determined files of tests/determined/), documents,
# templates (*.in) or debian/ (debian/copyright covers those). The line is the first (after a #!
# line), in the file's own comment syntax, e.g. `// SPDX-License-Identifier: Apache-2.0`; it
# counts within a file's first three lines.
set -euo pipefail
add=false
if [ "${1:-}" = --add ]; then add=true; shift; fi
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tag="SPDX-License-Identifier: Apache-2.0"

# Bash builtins only in the loop (no subshell, no head or grep per file): on a machine where a fork
# is slow, a thousand files' worth of them took a minute.
first_lines() {  # first_lines PATH: its first three lines into $lines (one string)
  local l1= l2= l3=
  { IFS= read -r l1; IFS= read -r l2; IFS= read -r l3; } < "$1" || true
  lines="$l1"$'\n'"$l2"$'\n'"$l3"
}
comment_of() {  # comment_of PATH: the line to add into $comment, empty when PATH is not a source
  comment=
  case $1 in
    tests/determined/corpus/* | tests/determined/refused/* | tests/fuzz/corpus/* | debian/*) ;;
    *.cpp | *.hpp | *.h | *.c | *.cu | *.cuh | *.proto | *.js) comment="// $tag" ;;
    *.css) comment="/* $tag */" ;;
    *.py | *.sh | *.cmake | */CMakeLists.txt | CMakeLists.txt) comment="# $tag" ;;
    *.lua) comment="-- $tag" ;;
    *)  # an executable script without a suffix, by its #! line
      if [[ $1 != *.* && -x $dir/$1 ]]; then
        first_lines "$dir/$1"
        [[ $lines == '#!'* ]] && comment="# $tag"
      fi ;;
  esac
  return 0
}

missing=()
while IFS= read -r -d '' path; do
  comment_of "$path"
  [ -n "$comment" ] || continue
  first_lines "$dir/$path"
  [[ $lines == *"$tag"* ]] && continue
  if $add; then
    file=$dir/$path
    if head -c 2 "$file" | grep -q '#!'; then
      { head -1 "$file"; echo "$comment"; tail -n +2 "$file"; } > "$file.spdx"
    else
      { echo "$comment"; cat "$file"; } > "$file.spdx"
    fi
    chmod --reference="$file" "$file.spdx"
    mv "$file.spdx" "$file"
    head -3 "$file" | grep -qF "$tag" || missing+=("$path")
  else
    missing+=("$path")
  fi
done < <(git -C "$dir" ls-files -z)

if [ "${#missing[@]}" -gt 0 ]; then
  printf '%s\n' "${missing[@]}"
  echo "spdx-check: ${#missing[@]} source file(s) without '$tag' in their first lines (bash scripts/spdx-check.sh --add adds it)" >&2
  exit 1
fi
echo "spdx-check: every source file carries '$tag'"
