// SPDX-License-Identifier: Apache-2.0
#pragma once
// An entrypoint given as one string runs as `/bin/sh -c STRING`. When the shell cannot run the
// string's own program (a typo, `pyhton3 train.py`; a script the snapshot lacks, `./trian.sh`; one
// without its execute bit), it says so on stderr and exits 127 or 126:
//   dash (Debian's /bin/sh)     /bin/sh: 1: pyhton3: not found                       127
//                               /bin/sh: 1: ./train.sh: Permission denied            126
//   bash as /bin/sh (RHEL...)   /bin/sh: line 1: pyhton3: command not found          127
//                               /bin/sh: line 1: ./trian.sh: No such file or directory 127
// The exec of /bin/sh itself succeeded, so dlx-launch's exec check (child_process.hpp) cannot see
// it, and it was an ordinary crash: restarted, each time after a wait in the queue, until the
// crash-loop rule stopped the third. A restart runs the same string on a node set up the same way
// and fails alike, as a failed exec of a program does: dlx-launch refuses the trial the same way
// (launch_phases.cpp). Only the string's first program counts: a script that runs and then calls a
// missing command exits 127 too, and stays a crash.
//
// The shell would also be the trainer's parent: Debian's dash does not exec a -c string's last
// command. Slurm signals every process of the step at a notice (a requeue, a preemption, the time
// limit's warning), and the shell's default action for SIGTERM, SIGUSR1 and SIGUSR2 is to die:
// dlx-launch then took the trainer for ended ("ended by the notice before it could checkpoint"),
// exited, and Slurm ended the step, killing the trainer while it saved its checkpoint. And where
// only dlx-launch gets the notice and passes it on (a container's processes, outside the step's
// cgroup, get it only through the runtime's signal proxy from dlx-launch), the shell got it, not
// the trainer, which then never saved.
// So a string that is one command (`python3 train.py --epochs 4`, Determined's
// `python3 -m determined.launch.torch_distributed python3 train.py`, with redirections and
// leading NAME=value assignments) runs as `exec` of it: the trainer is the shell's own process,
// and every signal reaches it as it would without a shell. Any other string (`cd src && python3
// train.py`, a pipeline, several lines) runs after `trap : TERM INT USR1 USR2`: a caught signal
// does nothing in the shell, which waits for its commands and exits with the last one's status
// (85 after a checkpoint), and is reset to its default in the programs the shell runs, so the
// trainer gets what Slurm sends it (but not what only dlx-launch passes on: use a list entrypoint,
// or one command, in a container).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlx::launch {

// `command` as dlx-launch runs it: an entrypoint string's `/bin/sh -c STRING` as `exec` of its one
// command, or else with the notice signals trapped in the shell (above); any other command as it
// is.
std::vector<std::string> trainer_shell_command(const std::vector<std::string>& command);

// The program a shell command line runs first: its first word after any leading `NAME=value`
// assignments. nullopt when that is not a plain word the shell runs as it stands (quotes, `$`, a
// glob, a redirection, `~`, a compound command or a reserved word: how the shell reads it is not
// for dlx to guess).
std::optional<std::string> shell_command_program(std::string_view command);

// Whether `last_line` (the trainer's last error line) is /bin/sh saying that it could not run
// `program`, with exit status 127 or 126 (`status`).
bool shell_could_not_run(int status, std::string_view program, std::string_view last_line);

// That line as the shell would say it without the `exec` dlx-launch put before the program
// ("/bin/sh: 1: exec: pyhton3: not found" -> "/bin/sh: 1: pyhton3: not found"): the user wrote none.
std::string without_added_exec(std::string_view last_line, std::string_view program);

}  // namespace dlx::launch
