#include "dlx/config/experiment.hpp"

namespace dlx::config {

const char* to_string(HyperparameterType type) {
  switch (type) {
    case HyperparameterType::constant: return "const";
    case HyperparameterType::integer: return "int";
    case HyperparameterType::real: return "double";
    case HyperparameterType::log: return "log";
    case HyperparameterType::categorical: return "categorical";
  }
  return "?";
}

const char* to_string(SearcherName name) {
  switch (name) {
    case SearcherName::single: return "single";
    case SearcherName::grid: return "grid";
    case SearcherName::random: return "random";
  }
  return "?";
}

}  // namespace dlx::config
