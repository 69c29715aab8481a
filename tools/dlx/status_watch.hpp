// SPDX-License-Identifier: Apache-2.0
#pragma once
// `dlx status --watch`: the status read again and shown every interval until SIGINT/SIGTERM (exit
// 0) or until every trial has ended (the last frame shows them ended). On a terminal each frame
// replaces the previous one; to a file or pipe the frames follow one another, each after a line
// with its time, with no escape sequence; with --json, one JSON document per line.
#include <filesystem>
#include <optional>
#include <string>

#include "dlx/config/experiment.hpp"
#include "status_render.hpp"

namespace dlx::cli {

struct WatchOptions {
  double interval_seconds = 2;
  bool json = false;
  bool sparklines = false;  // --sparklines: even when stdout is not a terminal
  std::optional<std::string> job;  // the experiment's array job: Slurm is asked every frame
};

int watch_status(const std::filesystem::path& directory, const config::Experiment& experiment,
                 const WatchOptions& options);

// The SECONDS of --watch: a number from 0.5 to 3600. Throws UsageError naming the problem.
double parse_watch_interval(const std::string& text);

}  // namespace dlx::cli
