#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/spdx-check.sh on a small git tree (tests.spdx_check): the check names each source
# without the SPDX line and no other file, --add gives each the line in its comment syntax (after
# a #! line, the file's mode and the rest of its bytes kept), a second --add changes nothing.
# Usage: spdx_check_test.sh SCRIPT
set -uo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
tag="SPDX-License-Identifier: Apache-2.0"

tree=$work/tree
mkdir -p "$tree/src" "$tree/tests/determined/corpus" "$tree/tests/determined/refused" "$tree/tools"
printf '#include <cstdio>\nint main() { return std::puts("x") < 0; }\n' > "$tree/src/main.cpp"
printf 'body { margin: 0; }\n' > "$tree/src/page.css"
printf '#!/usr/bin/env bash\necho hello\n' > "$tree/src/run.sh"
chmod 755 "$tree/src/run.sh"
printf '# %s\nprint("already")\n' "$tag" > "$tree/src/done.py"
printf -- '-- a comment\nreturn 0\n' > "$tree/src/filter.lua"
printf 'add_executable(main main.cpp)\n' > "$tree/src/CMakeLists.txt"
printf '#!/usr/bin/env bash\nexit 0\n' > "$tree/tools/helper"
chmod 755 "$tree/tools/helper"
printf 'name: data\n' > "$tree/src/experiment.yaml"
printf '# notes\n' > "$tree/README.md"
printf 'searcher: {name: grid}\n' > "$tree/tests/determined/corpus/det.yaml"
printf 'print("theirs")\n' > "$tree/tests/determined/refused/theirs.py"
printf 'print("ours")\n' > "$tree/tests/determined/corpus_test.py"
git -C "$tree" init -q && git -C "$tree" add -A

listed=$(bash "$script" "$tree" 2> "$work/err")
status=$?
[ "$status" -eq 1 ] && ok "the check fails on a tree with sources missing the line" || fail "the check exited $status"
expected="src/CMakeLists.txt
src/filter.lua
src/main.cpp
src/page.css
src/run.sh
tests/determined/corpus_test.py
tools/helper"
[ "$listed" = "$expected" ] && ok "exactly the sources without the line are listed" ||
  fail "listed: $(echo "$listed" | tr '\n' ' ') expected: $(echo "$expected" | tr '\n' ' ')"
grep -qF "spdx-check: 7 source file(s) without '$tag' in their first lines (bash scripts/spdx-check.sh --add adds it)" \
  "$work/err" && ok "the message says how many and how to fix it" || fail "message: $(cat "$work/err")"

bash "$script" --add "$tree" > "$work/add.log" 2>&1 && ok "--add, then the check passes" ||
  fail "--add: $(cat "$work/add.log")"
line() { sed -n "$2p" "$tree/$1"; }
[ "$(line src/main.cpp 1)" = "// $tag" ] && [ "$(line src/main.cpp 2)" = "#include <cstdio>" ] &&
  ok "C++: '// ' first, the code after it" || fail "src/main.cpp: $(head -2 "$tree/src/main.cpp")"
[ "$(line src/page.css 1)" = "/* $tag */" ] && ok "CSS: '/* */'" || fail "src/page.css: $(line src/page.css 1)"
[ "$(line src/filter.lua 1)" = "-- $tag" ] && ok "Lua: '-- '" || fail "src/filter.lua: $(line src/filter.lua 1)"
[ "$(line src/CMakeLists.txt 1)" = "# $tag" ] && ok "CMake: '# '" || fail "src/CMakeLists.txt: $(line src/CMakeLists.txt 1)"
[ "$(line src/run.sh 1)" = "#!/usr/bin/env bash" ] && [ "$(line src/run.sh 2)" = "# $tag" ] &&
  [ "$(line src/run.sh 3)" = "echo hello" ] && ok "shell: after the #! line" || fail "src/run.sh: $(cat "$tree/src/run.sh")"
[ -x "$tree/src/run.sh" ] && [ -x "$tree/tools/helper" ] && ok "executables stay executable" || fail "a mode was lost"
[ "$(line tools/helper 2)" = "# $tag" ] && ok "a script without a suffix, by its #! line" || fail "tools/helper: $(cat "$tree/tools/helper")"
[ "$(cat "$tree/src/done.py")" = "$(printf '# %s\nprint("already")' "$tag")" ] && ok "a file with the line is left alone" ||
  fail "src/done.py changed: $(cat "$tree/src/done.py")"
[ "$(cat "$tree/tests/determined/refused/theirs.py")" = 'print("theirs")' ] && [ "$(cat "$tree/src/experiment.yaml")" = "name: data" ] &&
  ok "data and others' files are left alone" || fail "a file that is not ours changed"
bash "$tree/src/run.sh" | grep -qx hello && ok "the script still runs" || fail "src/run.sh no longer runs"

before=$(cd "$tree" && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
bash "$script" --add "$tree" > /dev/null 2>&1
after=$(cd "$tree" && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
[ "$before" = "$after" ] && ok "a second --add changes nothing" || fail "a second --add changed files"

echo "# spdx_check_test: $failures failure(s)"
[ "$failures" -eq 0 ]
