// SPDX-License-Identifier: Apache-2.0
#pragma once
// The constructors behind make_method() and make_sampler(), one per method file.
#include <memory>

#include "dlx/config/experiment.hpp"
#include "dlx/searcher/method.hpp"
#include "dlx/searcher/sampler.hpp"

namespace dlx::searcher::detail {

// single, grid, random: ticket t trains trial t to max_length (or the trainer's own length).
std::unique_ptr<Method> make_fixed_trials_method(const config::Experiment& experiment);
// async_halving, both variants (asha.stop_once).
std::unique_ptr<Method> make_asha_method(const config::Experiment& experiment);
std::unique_ptr<Method> make_adaptive_asha_method(const config::Experiment& experiment);
std::unique_ptr<Method> make_pbt_method(const config::Experiment& experiment);

// Promotions a later ticket may run under ASHA's promotion variant (ticket_count's extra).
int asha_promotion_tickets(const config::Experiment& experiment);

std::unique_ptr<Sampler> make_random_sampler(const config::Experiment& experiment);
std::unique_ptr<Sampler> make_tpe_sampler(const config::Experiment& experiment);

}  // namespace dlx::searcher::detail
