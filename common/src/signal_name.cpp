// SPDX-License-Identifier: Apache-2.0
#include "dlx/common/signal_name.hpp"

#include <csignal>
#include <cstring>

#include <fmt/format.h>

namespace dlx {

namespace {

// glibc's own abbreviations (sigabbrev_np, glibc 2.32). The portable libdlx_c is built against
// glibc 2.31 (cmake/DlxPortableC.cmake) to load with 2.28, and 2.31 has none: there, the signals that Slurm, a user or
// a crash sends to a trainer are named, and the others are numbers.
const char* abbreviation(int signal_number) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  return ::sigabbrev_np(signal_number);
#else
  switch (signal_number) {
    case SIGHUP: return "HUP";
    case SIGINT: return "INT";
    case SIGQUIT: return "QUIT";
    case SIGILL: return "ILL";
    case SIGABRT: return "ABRT";
    case SIGBUS: return "BUS";
    case SIGFPE: return "FPE";
    case SIGKILL: return "KILL";
    case SIGUSR1: return "USR1";
    case SIGSEGV: return "SEGV";
    case SIGUSR2: return "USR2";
    case SIGPIPE: return "PIPE";
    case SIGALRM: return "ALRM";
    case SIGTERM: return "TERM";
    case SIGCONT: return "CONT";
    case SIGSTOP: return "STOP";
    case SIGXCPU: return "XCPU";
    default: return nullptr;
  }
#endif
}

}  // namespace

std::string signal_name(int signal_number) {
  const char* name = abbreviation(signal_number);
  return name ? fmt::format("SIG{}", name) : fmt::format("signal {}", signal_number);
}

}  // namespace dlx
