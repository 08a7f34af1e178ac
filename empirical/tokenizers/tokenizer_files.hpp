// Internal to empirical/tokenizers/: how the tokenizers and the lookup name, check and read
// their files, so that every message names the file the same way ('path').
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace attngeo::empirical::tokenizer_files {

// The file as tokenizer messages name it: 'path'.
std::string file_label(const std::string& path);
// An InputError "'path': file not found (expected <what>)" unless `path` is a regular file.
void require_file(const std::string& path, const std::string& what);
// The JSON file `path`, required as above and read by common/json_file (errors name the file).
nlohmann::json read_json(const std::string& path, const std::string& what);

}  // namespace attngeo::empirical::tokenizer_files
