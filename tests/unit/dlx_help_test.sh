#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `dlx COMMAND --help`, `-h` and `dlx help COMMAND` for every command and subcommand: exit 0, the
# help on stdout (usage line, options), no operand shown as an option (`--experiment arg`); and
# the failures: unknown commands and subcommands, usage errors (stderr, exit 2).
# usage: dlx_help_test.sh DLX DLX_CLUSTER_SCRIPT
set -uo pipefail
dlx=$1
cluster_script=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
checked=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# Bash builtins wherever a check runs per command and form (no grep, head or $(...) there): on a
# machine where a fork is slow, hundreds of them were most of this test's time.
# slurp VAR FILE: the file's text, its trailing newlines cut (as $(cat FILE) would).
slurp() {
  local -n into=$1
  IFS= read -r -d '' into <"$2" || true
  while [[ $into == *$'\n' ]]; do into=${into%$'\n'}; done
}
# has_line REGEX [TEXT]: whether a line of TEXT ($out by default) matches the extended REGEX.
has_line() {
  local regex=$1 line
  while IFS= read -r line; do [[ $line =~ $regex ]] && return 0; done <<<"${2-$out}"
  return 1
}
# run ARGS...: $rc, $out and $err of `dlx ARGS...` (no cluster or site settings from outside).
unset SLURM_CONF DLX_SITE_CONFIG DLX_STORAGE_ROOT
run() {
  "$dlx" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  slurp out "$work/out"
  slurp err "$work/err"
}

# COMMAND|OPTIONS IT SHOWS|OPERANDS IT MUST NOT SHOW AS OPTIONS
commands=(
  "validate|--json --site-config|--file"
  "plan|--json --site-config|--file"
  "convert-determined|--site-config|--file"
  "status|--json --write-h5|--experiment"
  "replay|--json --state --write-h5|--experiment"
  "logs|--attempt --rank --follow --json --raw|--experiment --trial"
  "export||"
  "export tensorboard|--force --json|--experiment --output"
  "report|-o --watch --json|--experiment"
  "doctor|--json --config --partitions|"
  "storage|--storage-root|--action --users"
  "storage add-user|--storage-root|--action --users"
  "storage check|--storage-root|--action --users"
  "ckpt||--target"
  "ckpt ls|--json|--target"
  "ckpt verify|--json|--paths"
  "ckpt show|--json|--path"
  "ckpt gc|--dry-run --remove-invalid --tmp-age-minutes|--experiment"
  "data||"
  "data ls|--dir|"
  "data gc|--dir --all --max-bytes|"
  "cluster|--state-dir --plugin --bin-dir --nodes --port-base --timeout|"
  "cluster up|--state-dir --plugin --bin-dir --nodes --port-base --timeout|"
  "cluster down|--state-dir --timeout|"
  "cluster env|--state-dir --bin-dir|"
  "cluster status|--state-dir|"
)
for entry in "${commands[@]}"; do
  IFS='|' read -r command shown hidden <<<"$entry"
  read -r -a words <<<"$command"
  for form in --help -h help; do
    if [ "$form" = help ]; then run help "${words[@]}"; label="dlx help $command"
    else run "${words[@]}" "$form"; label="dlx $command $form"; fi
    checked=$((checked + 1))
    [ "$rc" = 0 ] || { fail "$label: exit $rc, not 0: $err"; continue; }
    [ -z "$err" ] || fail "$label: printed on stderr: $err"
    [[ "$out" == "usage: dlx $command "* ]] ||
      fail "$label: the first line is not 'usage: dlx $command ...': ${out%%$'\n'*}"
    has_line '^Options:$' || fail "$label: no 'Options:' section"
    has_line '-h \[ --help \]' || fail "$label: --help is not among the options"
    for option in $shown; do
      has_line "^  $option( |$)" || fail "$label: option $option not listed"
    done
    for operand in $hidden; do
      ! has_line "^ +$operand( |$)" || fail "$label: the operand $operand is shown as an option"
    done
    ! has_line '^ +--[a-z0-9-]+ arg( |$)' || fail "$label: an option with an unnamed value ('arg'): $(grep -E -- ' arg( |$)' <<<"$out")"
  done
  # The same text whichever way it is asked for.
  run "${words[@]}" --help; by_option=$out
  run help "${words[@]}"
  [ "$out" = "$by_option" ] || fail "dlx help $command differs from dlx $command --help"
done

# Commands made of subcommands list them.
run ckpt --help
for sub in ls verify show gc; do grep -qE "^  $sub " <<<"$out" || fail "dlx ckpt --help does not list $sub"; done
run cluster --help
for sub in up down env status; do grep -qE "^  $sub " <<<"$out" || fail "dlx cluster --help does not list $sub"; done
run export --help
grep -qE "^  tensorboard " <<<"$out" || fail "dlx export --help does not list tensorboard"
run help
grep -qE "^  export tensorboard " <<<"$out" || fail "dlx help does not list export tensorboard"
grep -qE "^  convert-determined FILE " <<<"$out" || fail "dlx help does not list convert-determined"
run storage --help
for sub in add-user check; do grep -qE "^  $sub " <<<"$out" || fail "dlx storage --help does not list $sub"; done

# Help wins wherever it is, before any argument is checked; after `--` it is an operand.
run status 42 --help
[ "$rc" = 0 ] && [[ "$out" == "usage: dlx status "* ]] || fail "dlx status 42 --help: exit $rc: $out$err"
run ckpt gc --dry-run -h
[ "$rc" = 0 ] && [[ "$out" == "usage: dlx ckpt gc "* ]] || fail "dlx ckpt gc --dry-run -h: exit $rc: $out$err"
run cluster --state-dir "$work/x" up --help
[ "$rc" = 0 ] && [[ "$out" == "usage: dlx cluster up "* ]] || fail "dlx cluster --state-dir DIR up --help: exit $rc: $out$err"
[ ! -e "$work/x" ] || fail "dlx cluster up --help made the state directory"
run validate -- --help
[ "$rc" = 1 ] && [[ "$err" == *"--help"* ]] || fail "dlx validate -- --help: exit $rc, not 1 for a file named --help: $out$err"

# dlx help and dlx --help: the list of commands, on stdout.
for form in "help" "--help" "-h"; do
  run $form
  [ "$rc" = 0 ] && [[ "$out" == "usage: dlx COMMAND"* ]] && grep -q 'help \[COMMAND \[SUBCOMMAND\]\]' <<<"$out" ||
    fail "dlx $form: exit $rc: $out$err"
done

# Failures: stderr, exit 2, the problem first, no operand shown as an option.
expect_usage_error() {  # expect_usage_error FIRST_LINE USAGE_LINE ARGS...
  local first=$1 usage=$2
  shift 2
  run "$@"
  checked=$((checked + 1))
  [ "$rc" = 2 ] || { fail "dlx $*: exit $rc, not 2: $out$err"; return; }
  [ -z "$out" ] || fail "dlx $*: printed on stdout: $out"
  [ "$(head -1 <<<"$err")" = "$first" ] || fail "dlx $*: first line '$(head -1 <<<"$err")', not '$first'"
  grep -qF -- "$usage" <<<"$err" || fail "dlx $*: no '$usage' in: $err"
  ! grep -qE -- '^ +--(experiment|file|target|paths|path|action|users)( |$)' <<<"$err" ||
    fail "dlx $*: an operand shown as an option: $err"
}
expect_usage_error "dlx: unknown command 'nosuch'" "usage: dlx COMMAND" help nosuch
expect_usage_error "dlx: unknown command 'nosuch'" "usage: dlx COMMAND" nosuch --help
expect_usage_error "dlx: unknown dlx ckpt subcommand 'nosuch' (ls, verify, show, gc)" "usage: dlx ckpt " help ckpt nosuch
expect_usage_error "dlx: unknown dlx ckpt subcommand 'nosuch' (ls, verify, show, gc)" "usage: dlx ckpt " ckpt nosuch --help
expect_usage_error "dlx: unknown dlx ckpt subcommand 'nosuch' (ls, verify, show, gc)" "usage: dlx ckpt " ckpt nosuch
expect_usage_error "dlx: dlx ckpt needs a subcommand: ls, verify, show or gc" "usage: dlx ckpt " ckpt
expect_usage_error "dlx: unknown dlx cluster subcommand 'nosuch' (up, down, env, status)" "usage: dlx cluster " cluster nosuch --help
expect_usage_error "dlx: unknown dlx storage subcommand 'nosuch' (add-user, check)" "usage: dlx storage " storage nosuch --help
expect_usage_error "dlx: missing argument: job id or experiment directory" "usage: dlx status " status
expect_usage_error "dlx: dlx export needs a format: tensorboard" "usage: dlx export " export
expect_usage_error "dlx: unknown dlx export subcommand 'nosuch' (tensorboard)" "usage: dlx export " export nosuch
expect_usage_error "dlx: unknown dlx export subcommand 'nosuch' (tensorboard)" "usage: dlx export " export nosuch --help
expect_usage_error "dlx: missing argument: output directory" "usage: dlx export tensorboard " export tensorboard 42
expect_usage_error "dlx: missing argument: experiment files" "usage: dlx validate " validate --json
expect_usage_error "dlx: missing argument: checkpoint file" "usage: dlx ckpt show " ckpt show
expect_usage_error "dlx: unrecognised option '--nosuch'" "usage: dlx plan " plan --nosuch x.yaml
expect_usage_error "dlx: missing argument: Determined experiment file" "usage: dlx convert-determined " convert-determined
expect_usage_error "dlx: doctor: --partitions goes with --config (both saved reports of the same cluster)" \
  "usage: dlx doctor " doctor --partitions x

# `dlx cluster --help` documents every option of the script it runs.
script_options=$(bash "$cluster_script" --help | grep -oE -- '^  --[a-z-]+' | tr -d ' ')
[ -n "$script_options" ] || fail "no options in $cluster_script --help"
run cluster --help
for option in $script_options; do
  grep -qE -- "^  $option " <<<"$out" || fail "dlx cluster --help does not document $option (dlx-cluster has it)"
done

echo "# $checked help texts and errors checked, $failed failures"
[ "$failed" = 0 ]
