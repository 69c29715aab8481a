// The staging protocol (stage.hpp). First commit: the API only; the implementation follows.
#include "dlx/data/stage.hpp"

namespace dlx::data {

StagedData StagedData::stage(const StageRequest&, std::FILE*) {
  throw DataError("data staging is not implemented yet in this build");
}

std::uint64_t source_bytes(const std::vector<std::filesystem::path>&) {
  throw DataError("data staging is not implemented yet in this build");
}

std::vector<CacheEntry> list_cache(const std::filesystem::path&) {
  throw DataError("data staging is not implemented yet in this build");
}

GcResult collect_garbage(const std::filesystem::path&, const GcRequest&) {
  throw DataError("data staging is not implemented yet in this build");
}

}  // namespace dlx::data
