// SPDX-License-Identifier: Apache-2.0
#pragma once
// Sizes as people write them in config files: 100MB, 200MiB, 4096 (bytes); whole numbers only
// (1.5GB is refused). Decimal units (kB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB,
// GiB, TiB) powers of 1024, as `ls --si` and `ls -h` print them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlx {

// The size in bytes, or nullopt when `text` is not a whole number with one of the units above
// (or the result does not fit in 64 bits).
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

// For messages: "12.3 MB" (decimal, three significant digits), "512 B".
std::string format_byte_size(std::uint64_t bytes);

}  // namespace dlx
