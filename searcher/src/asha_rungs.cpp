#include "dlx/searcher/asha_rungs.hpp"

namespace dlx::searcher {

std::vector<Rung> asha_rungs(int max_trials, int divisor, int max_rungs, std::int64_t max_length) {
  // How many rungs fit: the lowest rung must still train for at least one unit.
  int count = 1;
  for (std::int64_t shortest = max_length; count < max_rungs && shortest / divisor >= 1; shortest /= divisor) ++count;
  std::vector<Rung> rungs(static_cast<std::size_t>(count));
  std::int64_t length = max_length;
  for (int k = count - 1; k >= 0; --k) {  // from the top: max_length, max_length / divisor, ...
    rungs[static_cast<std::size_t>(k)].index = k;
    rungs[static_cast<std::size_t>(k)].length = length;
    length /= divisor;
  }
  std::int64_t trials = max_trials;
  for (auto& rung : rungs) {
    rung.trials = static_cast<int>(trials);
    trials = trials / divisor > 0 ? trials / divisor : 1;
  }
  return rungs;
}

}  // namespace dlx::searcher
