// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/task_tickets.hpp"

#include <stdlib.h>

#include <algorithm>
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

// Two lists of the task's tickets: about 16 bytes a ticket, 1,000,000 tickets on one task at most.
constexpr std::size_t kMaxProgressBytes = std::size_t{32} << 20;

}  // namespace

std::optional<TaskTickets> task_tickets(const config::Experiment& experiment, const std::filesystem::path& experiment_dir,
                                        int ticket) {
  const int tasks = searcher::array_task_count(experiment);
  if (tasks >= searcher::ticket_count(experiment) || ticket < 0 || ticket >= tasks) return std::nullopt;
  const auto& resources = experiment.resources;
  return TaskTickets{.task = ticket,
                     .tickets = searcher::tickets_of_task(experiment, ticket),
                     .progress = experiment_dir / "tasks" / fmt::format("{}.json", ticket),
                     .at_once = config::packed_trials(resources),
                     .trials_per_gpu = resources.trials_per_gpu && !resources.trials_per_task ? *resources.trials_per_gpu : 0,
                     .mps = resources.mps && resources.trials_per_gpu && !config::shares_gpus_by_shards(resources)};
}

std::set<int> tickets_done(const TaskTickets& task) {
  std::error_code missing;
  if (!std::filesystem::exists(task.progress, missing)) return {};
  try {
    const auto json = nlohmann::json::parse(read_small_file(task.progress, kMaxProgressBytes));
    if (json.at("task").get<int>() != task.task) throw std::out_of_range("another task's file");
    const std::set<int> ours(task.tickets.begin(), task.tickets.end());
    std::set<int> done;
    if (json.contains("done")) {
      for (const int ticket : json.at("done").get<std::vector<int>>()) {
        if (!ours.contains(ticket)) throw std::out_of_range(fmt::format("ticket {} is not this task's", ticket));
        done.insert(ticket);
      }
    } else {  // the first form: a count of the first tickets
      const auto count = json.at("tickets_done").get<int>();
      if (count < 0 || count > static_cast<int>(task.tickets.size())) throw std::out_of_range("values out of range");
      done.insert(task.tickets.begin(), task.tickets.begin() + count);
    }
    return done;
  } catch (const std::exception& error) {
    fmt::print(stderr, "dlx-launch: warning: {} is damaged ({}): task {} starts again at its first ticket, {}\n",
               task.progress.string(), error.what(), task.task, task.tickets.front());
    return {};
  }
}

void record_tickets_done(const TaskTickets& task, const std::set<int>& done) {
  create_directories_with_mode(task.progress.parent_path());
  nlohmann::ordered_json json;
  json["task"] = task.task;
  json["tickets"] = task.tickets;
  json["done"] = done;
  write_file_durably(task.progress, json.dump() + "\n");
}

std::string tickets_text(const std::vector<int>& tickets, std::size_t from) {
  const auto rest = tickets.size() - std::min(from, tickets.size());
  return fmt::format("its ticket{} {}", rest == 1 ? "" : "s",
                     fmt::join(tickets.begin() + static_cast<std::ptrdiff_t>(tickets.size() - rest), tickets.end(), ", "));
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
