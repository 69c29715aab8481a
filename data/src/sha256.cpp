// SPDX-License-Identifier: Apache-2.0
#include "sha256.hpp"

#include <openssl/evp.h>

#include <array>

#include <fmt/format.h>

#include "dlx/data/stage.hpp"

namespace dlx::data {

void Sha256::Free::operator()(evp_md_ctx_st* context) const { EVP_MD_CTX_free(context); }

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
  if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
    throw DataError("cannot start a SHA-256 hash (OpenSSL's libcrypto failed: is it installed whole?)");
  }
}

void Sha256::update(const void* bytes, std::size_t size) {
  if (EVP_DigestUpdate(context_.get(), bytes, size) != 1) throw DataError("SHA-256 update failed in libcrypto");
}

std::string Sha256::hex_digest() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context_.get(), digest.data(), &size) != 1) throw DataError("SHA-256 final failed in libcrypto");
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace dlx::data
