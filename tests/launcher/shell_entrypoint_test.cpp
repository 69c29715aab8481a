// SPDX-License-Identifier: Apache-2.0
// An entrypoint string whose shell cannot run the string's own program (launcher/launch/include/
// dlx/launch/shell_entrypoint.hpp): which word is the program, and which of the shell's lines say
// it could not run it, as dash and bash print them (checked on Debian's /bin/sh and bash); and the
// command the trainer runs as: `exec` of a one-command string, the notices trapped otherwise.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "dlx/launch/shell_entrypoint.hpp"

using dlx::launch::shell_command_program;
using dlx::launch::shell_could_not_run;
using dlx::launch::trainer_shell_command;
using dlx::launch::without_added_exec;

namespace {

std::string run_as(const std::string& entrypoint) { return trainer_shell_command({"/bin/sh", "-c", entrypoint})[2]; }

}  // namespace

TEST_CASE("shell entrypoint: the program is the first plain word after assignments", "[launch]") {
  CHECK(shell_command_program("pyhton3 train.py --lr 0.1") == "pyhton3");
  CHECK(shell_command_program("  ./trian.sh") == "./trian.sh");
  CHECK(shell_command_program("CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=4 python3 -m det") == "python3");
  CHECK(shell_command_program("/usr/bin/python3\ttrain.py") == "/usr/bin/python3");
  // How the shell reads these is not for dlx to guess: no program.
  for (const char* unclear : {"$PYTHON train.py", "\"my trainer\" x", "~/bin/train", "(cd src && python3 x)",
                              "{ python3 x; }", "if true; then x; fi", "for i in 1; do x; done", "X='a b' python3",
                              "! python3 x", "python3>log", "", "   ", "A=1", "\npython3"}) {
    INFO(unclear);
    CHECK_FALSE(shell_command_program(unclear));
  }
}

TEST_CASE("shell entrypoint: the shell's own words for a program it could not run", "[launch]") {
  // dash, Debian's /bin/sh
  CHECK(shell_could_not_run(127, "pyhton3", "/bin/sh: 1: pyhton3: not found"));
  CHECK(shell_could_not_run(127, "./trian.sh", "/bin/sh: 1: ./trian.sh: not found"));
  CHECK(shell_could_not_run(126, "./train.sh", "/bin/sh: 1: ./train.sh: Permission denied"));
  // bash as /bin/sh, with and without the line number
  CHECK(shell_could_not_run(127, "pyhton3", "/bin/sh: line 1: pyhton3: command not found"));
  CHECK(shell_could_not_run(127, "./trian.sh", "/bin/sh: line 1: ./trian.sh: No such file or directory"));
  CHECK(shell_could_not_run(126, "/tmp", "/bin/sh: line 1: /tmp: Is a directory"));
  CHECK(shell_could_not_run(127, "pyhton3", "/bin/sh: pyhton3: command not found"));
  CHECK(shell_could_not_run(127, "pyhton3", "sh: 1: pyhton3: not found"));
  // A one-command string runs as `exec PROGRAM`: dash and bash say so.
  CHECK(shell_could_not_run(127, "pyhton3", "/bin/sh: 1: exec: pyhton3: not found"));
  CHECK(shell_could_not_run(126, "./train.sh", "/bin/sh: 1: exec: ./train.sh: Permission denied"));
  CHECK(shell_could_not_run(127, "pyhton3", "/bin/sh: line 1: exec: pyhton3: not found"));
  CHECK(shell_could_not_run(126, "./train.sh", "/bin/sh: exec: ./train.sh: cannot execute: Permission denied"));
  CHECK(shell_could_not_run(126, "/tmp", "/bin/sh: exec: /tmp: cannot execute: Is a directory"));
  CHECK_FALSE(shell_could_not_run(126, "./train.sh", "/bin/sh: 1: ./train.sh: cannot execute: Permission denied"));
  // Quoted to the user as the shell says it of what they wrote, without dlx-launch's `exec`.
  CHECK(without_added_exec("/bin/sh: 1: exec: pyhton3: not found", "pyhton3") == "/bin/sh: 1: pyhton3: not found");
  CHECK(without_added_exec("/bin/sh: exec: ./t.sh: cannot execute: Permission denied", "./t.sh") ==
        "/bin/sh: ./t.sh: Permission denied");
  CHECK(without_added_exec("/bin/sh: 1: pyhton3: not found", "pyhton3") == "/bin/sh: 1: pyhton3: not found");

  // The program ran, and something it ran was missing: its own 127, a crash.
  CHECK_FALSE(shell_could_not_run(127, "sh", "/bin/sh: 1: helper: not found"));
  CHECK_FALSE(shell_could_not_run(127, "python3", "train.sh: 3: helper: not found"));
  // Another shell's words, another status, or more on the line.
  CHECK_FALSE(shell_could_not_run(127, "pyhton3", "zsh: command not found: pyhton3"));
  CHECK_FALSE(shell_could_not_run(1, "pyhton3", "/bin/sh: 1: pyhton3: not found"));
  CHECK_FALSE(shell_could_not_run(126, "pyhton3", "/bin/sh: 1: pyhton3: not found"));
  CHECK_FALSE(shell_could_not_run(127, "./train.sh", "/bin/sh: 1: ./train.sh: Permission denied"));
  CHECK_FALSE(shell_could_not_run(127, "pyhton3", "/bin/sh: 1: pyhton3: not found (really)"));
  CHECK_FALSE(shell_could_not_run(127, "py", "/bin/sh: 1: pyhton3: not found"));
  CHECK_FALSE(shell_could_not_run(127, "pyhton3", ""));
}

TEST_CASE("shell entrypoint: one command runs as exec of it, anything else with the notices trapped", "[launch]") {
  // The trainer becomes the shell's own process: what dlx-launch passes on reaches it.
  CHECK(run_as("python3 train.py --epochs 4") == "exec python3 train.py --epochs 4");
  CHECK(run_as("python3 -m determined.launch.torch_distributed python3 model_def.py --epochs 4") ==
        "exec python3 -m determined.launch.torch_distributed python3 model_def.py --epochs 4");
  CHECK(run_as("  OMP_NUM_THREADS=4 A=b python3 train.py") == "  OMP_NUM_THREADS=4 A=b exec python3 train.py");
  CHECK(run_as("python3 train.py --name 'a; b' --x \"c && d\" > out.log 2>&1") ==
        "exec python3 train.py --name 'a; b' --x \"c && d\" > out.log 2>&1");
  CHECK(run_as("python3 train.py \\\n  --lr 0.1") == "exec python3 train.py \\\n  --lr 0.1");  // a continued line
  CHECK(run_as("python3 train.py # the usual; nothing more") == "exec python3 train.py # the usual; nothing more");
  CHECK(run_as("python3 train.py --tag=a#b") == "exec python3 train.py --tag=a#b");
  // YAML's `entrypoint: >` (folded, not stripped) ends the string with a newline.
  CHECK(run_as("python3 -m determined.launch.torch_distributed python3 train.py\n") ==
        "exec python3 -m determined.launch.torch_distributed python3 train.py\n");
  // Several commands, a pipeline, a background job, a group, substitutions, builtins, a program
  // that is no plain word: the shell stays, with the notices trapped.
  for (const char* several :
       {"cd src && python3 train.py", "python3 a.py; python3 b.py", "python3 train.py | tee log", "python3 train.py &",
        "python3 a.py\npython3 b.py", "(cd src; python3 x)", "{ python3 x; }", "python3 train.py --date \"$(date)\"",
        "python3 train.py `cat args`", "cd src", "echo hi", "export A=1", "exec python3 train.py", "$PY train.py",
        "if true; then python3 x; fi", "python3 'unclosed", "python3 train.py \\"}) {
    INFO(several);
    CHECK(run_as(several) == std::string("trap : TERM INT USR1 USR2; ") + several);
  }
  // A list entrypoint, or a command of dlx-launch's own, stays as it is.
  CHECK(trainer_shell_command({"python3", "train.py"}) == std::vector<std::string>{"python3", "train.py"});
  CHECK(trainer_shell_command({"/bin/bash", "-c", "x"}) == std::vector<std::string>{"/bin/bash", "-c", "x"});
}
