// SPDX-License-Identifier: Apache-2.0
// The Catch2 runner of every unit test executable (tests/support/catch_session.hpp: a run whose
// test specification matches no test case fails).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.hpp"

int main(int argc, char** argv) { return dlx::testing::run_catch_session(argc, argv); }
