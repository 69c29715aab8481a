// SPDX-License-Identifier: Apache-2.0
#pragma once
// SHA-256 through OpenSSL's libcrypto (EVP): the cache keys and the checksum mode.
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace dlx::data {

class Sha256 {
 public:
  Sha256();
  void update(const void* bytes, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  std::string hex_digest();  // ends the hash

 private:
  struct Free {
    void operator()(evp_md_ctx_st* context) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> context_;
};

}  // namespace dlx::data
