// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the C API's translation units share (c_api.cpp, c_api_checkpoint.cpp): the trial handle,
// and `guarded`, which runs an entry point's body and turns each exception type into a status,
// keeping the message for dlx_last_error(), so that no exception crosses into C.
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "dlx/c_api.h"
#include "dlx/comm/comm_error.hpp"
#include "dlx/trial.hpp"

struct dlx_trial {
  std::unique_ptr<dlx::Trial> trial;
  std::string hparams_json;         // flat (dlx_trial_hparams_json)
  std::string nested_hparams_json;  // as DLX_HPARAMS (dlx_trial_hparams_nested_json)
  std::string experiment_dir, checkpoint_dir, latest_checkpoint;
  // hparam_string/hparam_json results, kept until destroy. A deque: a push_back leaves the
  // earlier strings where they are (a vector's growth would move short strings' characters and
  // break pointers handed out before).
  std::deque<std::string> strings;
  // dlx_trial_metric_names' sets, by the number it handed out.
  std::vector<dlx::MetricNames> metric_names;
};

namespace dlx::c_api {

// This thread's last failure message (dlx_last_error()).
inline std::string& last_error() {
  thread_local std::string message;
  return message;
}

class InvalidArgument : public dlx::Error {
 public:
  using Error::Error;
};

template <class Body>
dlx_status guarded(Body&& body) noexcept {
  try {
    body();
    return DLX_OK;
  } catch (const InvalidArgument& error) {
    last_error() = error.what();
    return DLX_ERROR_INVALID_ARGUMENT;
  } catch (const dlx::HparamError& error) {
    last_error() = error.what();
    return DLX_ERROR_HPARAM;
  } catch (const dlx::TrialConfigError& error) {
    last_error() = error.what();
    return DLX_ERROR_CONFIG;
  } catch (const dlx::comm::CommError& error) {
    last_error() = error.what();
    return DLX_ERROR_COMM;
  } catch (const dlx::Error& error) {  // TrialError, EnvError, CheckpointError, ConfigError
    last_error() = error.what();
    return DLX_ERROR_TRIAL;
  } catch (const std::exception& error) {
    last_error() = error.what();
    return DLX_ERROR_INTERNAL;
  } catch (...) {
    last_error() = "dlx: unknown error";
    return DLX_ERROR_INTERNAL;
  }
}

template <class T>
T& need(T* pointer, const char* what) {
  if (pointer == nullptr) throw InvalidArgument(std::string("dlx: ") + what + " is NULL");
  return *pointer;
}

inline const char* text(const char* pointer, const char* what) {
  if (pointer == nullptr) throw InvalidArgument(std::string("dlx: ") + what + " is NULL");
  return pointer;
}

}  // namespace dlx::c_api
