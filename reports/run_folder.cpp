// Run folders to sections by kind; see run_folder.hpp.
#include "reports/run_folder.hpp"

#include <filesystem>
#include <map>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/run_schema.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {

namespace {

using SectionBuilder = std::vector<Section> (*)(const RunFolder&);

// The registry of run kinds; a new kind is one line here.
const std::map<std::string, SectionBuilder>& builders() {
    static const std::map<std::string, SectionBuilder> table = {
        {"simulate", simulation_sections},
        {"sweep", sweep_sections},
        {"extract", extract_sections},
        {"compare", compare_sections},
        {schema::kind::compare_set, compare_set_sections},
        {schema::kind::truncate, truncate_sections},
        {schema::kind::normalization, normalization_limits_sections},
    };
    return table;
}

}  // namespace

RunFolder read_run_folder(const std::string& dir, int index, const std::string& named_by) {
    const fs::path manifest_path = fs::path(dir) / schema::file::manifest;
    if (!fs::is_regular_file(manifest_path))
        throw InputError(named_by + " '" + dir + "': no manifest.json (not an attngeo run folder)");
    RunFolder run;
    run.dir = dir;
    run.index = index;
    run.named_by = named_by;
    run.manifest = read_json_file(manifest_path.string(), "an attngeo run manifest");
    const auto kind_field = run.manifest.find("kind");
    const std::string kind =
        run.manifest.is_object() && kind_field != run.manifest.end() && kind_field->is_string()
            ? kind_field->get<std::string>()
            : "";
    if (!builders().count(kind)) {
        throw InputError(
            named_by + " '" + dir + "': run kind '" + kind +
            "' has no reader (known: simulate, sweep, extract, compare, compare-set, truncate, "
            "normalization)");
    }
    schema::check_format_version(run.manifest, manifest_path.string());
    return run;
}

std::vector<Section> run_sections(const RunFolder& run) {
    // A key missing from, or of the wrong type in, any file of the folder is bad input. A
    // simulate or sweep folder's only JSON is its manifest, so that file is named; the sections
    // read their tables first (simulation_tables.hpp), each error naming its file. Extract and
    // compare sections read several JSON files (manifest.json, kappa.json, fitted_params.json,
    // snapshot.json) and name each where it is read (empirical_sections.cpp); the folder is named
    // only as a last resort.
    const std::string kind = run.manifest.at("kind").get<std::string>();
    const bool simulation = kind == "simulate" || kind == "sweep";
    const std::string json_source = simulation ? run_manifest_path(run.dir) : run.dir;
    try {
        return with_json_context(json_source, [&] { return builders().at(kind)(run); });
    } catch (const std::invalid_argument& e) {  // a reader that missed a damaged value
        throw InputError(run.named_by + " '" + run.dir +
                         "': a file of the run folder is damaged (" + e.what() + ")");
    } catch (const std::out_of_range& e) {
        throw InputError(run.named_by + " '" + run.dir +
                         "': the files of the run folder disagree (" + e.what() + ")");
    }
}

}  // namespace attngeo::reports
