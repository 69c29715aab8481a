// SPDX-License-Identifier: Apache-2.0
#include "test_support.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

#include "dlx/common/durable_file.hpp"

namespace dlx::checkpoint::testing {

ScratchDir::ScratchDir() {
  auto pattern = (std::filesystem::temp_directory_path() / "dlx-ckpt-test.XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

record::TrialRecord sample_record() {
  record::TrialRecord record;
  record.experiment = "mnist-asha";
  record.trial_id = 17;
  record.state = "completed";
  record.exit_code = 0;
  record.stop_reason = "searcher: rung 2 cut";
  record.restarts = 1;
  record.world_size = 4;
  record.nodes = "node01,node01,node02,node02";
  record.slurm_job_id = "123456_17";
  record.hparams = nlohmann::ordered_json::object();
  record.hparams["optim.lr"] = 0.003;
  record.hparams["batch_size"] = 128;
  record.hparams["seed"] = -42;
  record.hparams["model.arch"] = "résnet-18";
  record.hparams["use_amp"] = true;
  record.hparams["shuffle"] = false;
  record.created_unix = 1700000000;
  record.updated_unix = 1700003600;
  record.training.append(100, {{"loss", 2.5}, {"accuracy", 0.1}});
  record.training.append(200, {{"loss", 1.25}});
  record.training.append(300, {{"loss", 0.75}, {"accuracy", 0.6}});
  record.validation.append(200, {{"val_loss", 1.5}});
  record.validation.append(300, {{"val_loss", 1.0}, {"val_accuracy", 0.5}});
  return record;
}

std::vector<std::string> file_names_in(const std::filesystem::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_bytes(const std::filesystem::path& path) {
  return dlx::read_small_file(path, std::size_t{1} << 24);
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  dlx::write_file_durably(path, bytes);
}

void flip_byte_in_place(const std::filesystem::path& path, std::size_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x10);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
  if (!file) throw std::runtime_error("cannot flip byte " + std::to_string(offset) + " of " + path.string());
}

}  // namespace dlx::checkpoint::testing
