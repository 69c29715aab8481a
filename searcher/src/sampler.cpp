#include "dlx/searcher/sampler.hpp"

#include "method_factories.hpp"

namespace dlx::searcher {

std::unique_ptr<Sampler> make_sampler(const config::Experiment& experiment) {
  return detail::make_random_sampler(experiment);
}

}  // namespace dlx::searcher
