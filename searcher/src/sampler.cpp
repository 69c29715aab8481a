// SPDX-License-Identifier: Apache-2.0
#include "dlx/searcher/sampler.hpp"

#include "method_factories.hpp"

namespace dlx::searcher {

std::unique_ptr<Sampler> make_sampler(const config::Experiment& experiment) {
  // The parser allows sampler: tpe only where new trials are drawn (random and ASHA); PBT and the
  // others always get the random sampler.
  if (experiment.searcher.sampler == config::SamplerName::tpe) return detail::make_tpe_sampler(experiment);
  return detail::make_random_sampler(experiment);
}

}  // namespace dlx::searcher
