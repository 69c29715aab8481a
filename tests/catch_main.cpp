// SPDX-License-Identifier: Apache-2.0
// The main() of every unit test executable (tests/support/catch_session.hpp: a run whose test
// specification matches no test case fails); Catch2's implementation is catch_runner.cpp.
#include "catch_session.hpp"

int main(int argc, char** argv) { return dlx::testing::run_catch_session(argc, argv); }
