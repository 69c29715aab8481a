// SPDX-License-Identifier: Apache-2.0
// The resume rendezvous of ranks without a communicator; the protocol is in resume_rendezvous.hpp.
#include "resume_rendezvous.hpp"

#include <cerrno>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/checkpointing.hpp"
#include "dlx/common/durable_file.hpp"

namespace dlx::detail {

namespace {

constexpr std::string_view kPrefix = ".resume.";
constexpr std::size_t kMaxChoiceBytes = 64 * 1024;
constexpr auto kDefaultWait = std::chrono::seconds(900);

bool is_name_text(std::string_view text) {
  if (text.empty() || text.size() > 128) return false;
  for (const char c : text) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
    if (!plain) return false;
  }
  return true;
}

std::string run_of(const env::EnvMap& env) {
  if (const auto given = env::lookup(env, "DLX_RUN_ID"); given && !given->empty()) {
    if (!is_name_text(*given)) {
      throw CheckpointingError(fmt::format(
          "dlx: DLX_RUN_ID='{}' is not a run name (1 to 128 letters, digits, '_', '-', '.'): "
          "set it to one value shared by every rank of this run, new for each run",
          given->substr(0, 128)));
    }
    return *given;
  }
  const auto job = env::lookup(env, "SLURM_JOB_ID").value_or("");
  const auto step = env::lookup(env, "SLURM_STEP_ID").value_or("");
  const auto restarts = env::lookup(env, "SLURM_RESTART_COUNT").value_or("0");
  if (job.empty() || step.empty()) {
    throw CheckpointingError(
        "dlx: the ranks of this trial have no communicator and this is no Slurm job step, so "
        "they cannot agree on the checkpoint to resume from: run them with `srun dlx-launch`, or "
        "set DLX_RUN_ID to one value shared by every rank and new for each run");
  }
  auto run = fmt::format("{}.{}.{}", job, restarts.empty() ? "0" : restarts, step);
  if (!is_name_text(run)) {
    throw CheckpointingError(fmt::format(
        "dlx: SLURM_JOB_ID, SLURM_RESTART_COUNT and SLURM_STEP_ID do not make a run name ('{}')",
        run.substr(0, 128)));
  }
  return run;
}

}  // namespace

ResumeRendezvous ResumeRendezvous::for_run(const std::filesystem::path& trial_dir,
                                           const env::EnvMap& env, int call) {
  auto prefix = fmt::format("{}{}.", kPrefix, run_of(env));
  auto path = trial_dir / fmt::format("{}{}", prefix, call);
  return ResumeRendezvous(std::move(path), std::move(prefix));
}

std::chrono::milliseconds ResumeRendezvous::wait_limit(const env::EnvMap& env) {
  if (const auto seconds = env::lookup_int(env, "DLX_RESUME_WAIT_S"); seconds && *seconds > 0) {
    return std::chrono::seconds(*seconds);
  }
  return kDefaultWait;
}

void ResumeRendezvous::publish(const ResumeChoice& choice) const {
  const auto directory = path_.parent_path();
  std::error_code error;
  // Earlier launches' choices: only this trial's runs use the directory, one at a time.
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with(kPrefix) && !name.starts_with(run_prefix_)) {
      std::filesystem::remove(entry.path(), error);
    }
  }
  nlohmann::json text = choice.error.empty()
                            ? nlohmann::json{{"checkpoint", choice.checkpoint.string()}}
                            : nlohmann::json{{"error", choice.error}};
  write_file_durably(path_, text.dump());
}

ResumeChoice ResumeRendezvous::wait(std::chrono::milliseconds limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto pause = std::chrono::milliseconds(5);
  while (true) {
    std::string text;
    try {
      text = read_small_file(path_, kMaxChoiceBytes);
    } catch (const SystemError& error) {
      if (error.error_number() != ENOENT) {
        throw CheckpointingError(fmt::format("dlx: cannot read rank 0's choice of checkpoint: {}",
                                             error.what()));
      }
    }
    if (!text.empty()) {
      const auto parsed = nlohmann::json::parse(text, nullptr, false);
      const auto field = [&](const char* name) -> std::optional<std::string> {
        if (!parsed.is_object() || !parsed.contains(name) || !parsed[name].is_string()) {
          return std::nullopt;
        }
        return parsed[name].get<std::string>();
      };
      if (auto failure = field("error")) return {{}, *failure};
      if (auto chosen = field("checkpoint")) return {*chosen, {}};
      throw CheckpointingError(fmt::format(
          "dlx: {} does not hold rank 0's choice of checkpoint (a JSON object with "
          "\"checkpoint\" or \"error\"); it is written by dlx only", path_.string()));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw CheckpointingError(fmt::format(
          "dlx: rank 0 did not say within {} s which checkpoint to resume from (no {}): is rank "
          "0 running and calling resume() too? (DLX_RESUME_WAIT_S sets the limit)",
          std::chrono::duration_cast<std::chrono::seconds>(limit).count(), path_.string()));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(250));
  }
}

}  // namespace dlx::detail
