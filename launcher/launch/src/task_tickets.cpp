// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/task_tickets.hpp"

#include <stdlib.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/trial_plan.hpp"

namespace dlx::launch {

namespace {

constexpr std::size_t kMaxProgressBytes = 4096;

}  // namespace

std::optional<TaskTickets> task_tickets(const config::Experiment& experiment, const std::filesystem::path& experiment_dir,
                                        int ticket) {
  const int tasks = searcher::array_task_count(experiment);
  if (tasks >= searcher::ticket_count(experiment) || ticket < 0 || ticket >= tasks) return std::nullopt;
  return TaskTickets{.task = ticket,
                     .tickets = searcher::tickets_of_task(experiment, ticket),
                     .progress = experiment_dir / "tasks" / fmt::format("{}.json", ticket)};
}

int tickets_done(const TaskTickets& task) {
  std::error_code missing;
  if (!std::filesystem::exists(task.progress, missing)) return 0;
  try {
    const auto json = nlohmann::json::parse(read_small_file(task.progress, kMaxProgressBytes));
    const auto done = json.at("tickets_done").get<int>();
    if (json.at("task").get<int>() != task.task || done < 0 || done > static_cast<int>(task.tickets.size())) {
      throw std::out_of_range("values out of range");
    }
    return done;
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: {} is damaged ({}): task {} starts again at its first ticket, {}\n",
               task.progress.string(), error.what(), task.task, task.tickets.front());
    return 0;
  }
}

void record_tickets_done(const TaskTickets& task, int done) {
  create_directories_with_mode(task.progress.parent_path());
  nlohmann::ordered_json json;
  json["task"] = task.task;
  json["tickets_done"] = done;
  json["tickets"] = task.tickets;
  write_file_durably(task.progress, json.dump() + "\n");
}

env::EnvMap ticket_environment(const env::EnvMap& task_env, int ticket) {
  env::EnvMap out;
  for (const auto& [name, value] : task_env) {
    if (!name.starts_with("DLX_HP_")) out.emplace(name, value);
  }
  out["DLX_TICKET"] = std::to_string(ticket);
  out["DLX_TRIAL_ID"] = std::to_string(ticket);
  out["DLX_HPARAMS"] = "{}";
  out["DLX_CHECKPOINT_DIR"] = "";
  out["DLX_LATEST_CHECKPOINT"] = "";
  return out;
}

void replace_process_environment(const env::EnvMap& env) {
  if (::clearenv() != 0) throw Error("cannot clear the environment for the next ticket");
  for (const auto& [name, value] : env) {
    if (::setenv(name.c_str(), value.c_str(), 1) != 0) {
      throw Error(fmt::format("cannot set {} for the next ticket", name));
    }
  }
}

}  // namespace dlx::launch
