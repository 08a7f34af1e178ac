// Where the tests find ../shared (golden references, real checkpoints, tokenizers) and whether
// its absence must fail rather than skip — one definition for every test file.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace attngeo::test_support {

// $ATTNGEO_SHARED when set and non-empty, else <repository>/../shared (ATTNGEO_SOURCE_DIR is the
// repository root, defined by tests/CMakeLists.txt).
inline std::filesystem::path shared_folder() {
    if (const char* env = std::getenv("ATTNGEO_SHARED"); env && *env) return env;
    return std::filesystem::path(ATTNGEO_SOURCE_DIR) / ".." / "shared";
}

// CI sets ATTNGEO_REQUIRE_SHARED=1 so that missing shared data fails instead of skipping.
inline bool shared_required() {
    const char* env = std::getenv("ATTNGEO_REQUIRE_SHARED");
    return env && std::string(env) == "1";
}

}  // namespace attngeo::test_support

// In a test body: skip when `path` (a file or folder of the shared data) is absent, or fail when
// CI requires the shared data (ATTNGEO_REQUIRE_SHARED=1).
#define REQUIRE_SHARED_FILE(path)                                                               \
    if (!std::filesystem::exists(path)) {                                                       \
        if (::attngeo::test_support::shared_required())                                         \
            FAIL() << "shared file " << (path) << " not found (ATTNGEO_REQUIRE_SHARED=1)";      \
        GTEST_SKIP() << "shared file " << (path)                                                \
                     << " not found; set ATTNGEO_SHARED to the shared folder to run this test"; \
    }
