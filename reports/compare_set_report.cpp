// The report of a compare set (`attngeo compare` with several --emp, docs/design.md §7): the
// universal κ — per variant and side the intersection of the models' κ sets, its κ_edge and how
// many models are consistent — from universal_kappa.csv, then each model's folder reported as a
// compare folder of its own, its sections titled by the folder and its figure ids prefixed.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "reports/csv_table.hpp"
#include "reports/html.hpp"
#include "reports/run_folder.hpp"
#include "reports/verdict.hpp"
#include "reports/verdict_text.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

// One model of the set as the manifest lists it.
struct SetModel {
    std::string emp, folder;
};

std::vector<SetModel> models_of(const RunFolder& run) {
    return with_json_context(run_manifest_path(run.dir), [&] {
        std::vector<SetModel> models;
        for (const nlohmann::json& m : run.manifest.at("models")) {
            SetModel model{m.at("emp").get<std::string>(), m.at("folder").get<std::string>()};
            // a folder name, never a path out of the set
            if (model.folder.empty() || model.folder.find('/') != std::string::npos ||
                model.folder.front() == '.')
                throw InputError("'" + run_manifest_path(run.dir) + "': model folder '" +
                                 model.folder + "' is not a folder name inside the set");
            models.push_back(model);
        }
        if (models.size() < 2)
            throw InputError("'" + run_manifest_path(run.dir) +
                             "': " + std::to_string(models.size()) +
                             " models, expected at least 2 in a compare set");
        return models;
    });
}

std::string bad(const std::string& text) {
    return "<span class=\"bad\">" + text + "</span>";
}

std::string optional_cell(const CsvTable& t, std::size_t r, const char* name) {
    return t.text(r, name).empty() ? std::string("–") : short_number(t.number(r, name));
}

// universal_kappa.csv's rows as the table, and the sides without a universal κ.
std::string universal_table(const CsvTable& t, std::size_t models,
                            std::vector<std::string>& without) {
    std::vector<std::vector<std::string>> cells;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
        const std::string& state = t.text(r, "state");
        if (state != "universal-kappa" && state != "no-universal-kappa")
            throw InputError(t.where(r, "state") + ": '" + state +
                             "', expected universal-kappa or no-universal-kappa");
        if (static_cast<std::size_t>(t.integer(r, "models")) != models)
            throw InputError(t.where(r, "models") + ": " + t.text(r, "models") +
                             " models, but the set's manifest lists " + std::to_string(models));
        const std::string consistent =
            t.text(r, "models_consistent") + " of " + t.text(r, "models");
        const std::string side = t.text(r, "metric") + " " + t.text(r, "side");
        if (state == "no-universal-kappa")
            without.push_back(side + " of <code>" + html_escape(t.text(r, "variant")) +
                              "</code> (" + consistent + " models consistent)");
        cells.push_back({html_escape(t.text(r, "variant")), t.text(r, "metric"), t.text(r, "side"),
                         state == "universal-kappa" ? state : bad(state),
                         html_escape(t.text(r, "kappa_set")), optional_cell(t, r, "kappa_edge"),
                         optional_cell(t, r, "gap_at_edge"), consistent});
    }
    return html_table({"variant", "metric", "side", "state", "universal κ set", "κ_edge",
                       "gap at κ_edge", "models consistent"},
                      cells);
}

Section universal_section(const RunFolder& run, const std::vector<SetModel>& models) {
    const CsvTable table = read_table_with_columns(
        (fs::path(run.dir) / schema::file::universal_kappa).string(),
        schema::csv_column_names(schema::page::compare, schema::file::universal_kappa,
                                 {"variant", "metric", "side", "kappa_set", "kappa_edge",
                                  "gap_at_edge", "models", "models_consistent", "state"}));
    // The manifest's block holds every variant's four sides (joint_json).
    with_json_context(run_manifest_path(run.dir), [&] {
        for (const std::string& v : variant_names())
            for (const char* metric : {"P", "R"})
                for (const char* side : {"lower", "upper"})
                    (void)run.manifest.at("universal_kappa")
                        .at(v)
                        .at(metric)
                        .at(side)
                        .at("kappa_set")
                        .get<std::string>();
    });
    std::vector<std::string> without;
    const std::string html_table_text = universal_table(table, models.size(), without);
    std::ostringstream html;
    html << "<div class=\"bottom-line\"><p><b>A universal κ</b> (the paper's claim: one κ for "
            "every model and head) — the intersection of the "
         << models.size() << " models' κ sets, each at 95 %: ";
    if (without.empty())
        html << "every side has one.";
    else
        html << "exists for " << table.rows.size() - without.size() << " of " << table.rows.size()
             << " sides; " << bad("none") << " for " << verdict_words::join(without) << ".";
    html << "</p></div>\n" << html_table_text << "<p>Models (each reported below): ";
    std::vector<std::string> listed;
    for (const SetModel& m : models)
        listed.push_back("<code>" + html_escape(m.folder) + "</code> from <code>" +
                         html_escape(m.emp) + "</code>");
    html << verdict_words::join(listed) << ". From <code>"
         << html_escape((fs::path(run.dir) / schema::file::universal_kappa).string())
         << "</code>.</p>\n";
    Section s;
    s.title = "The universal κ over " + std::to_string(models.size()) + " models";
    s.html_before = html.str();
    return s;
}

}  // namespace

std::vector<Section> compare_set_sections(const RunFolder& run) {
    const std::vector<SetModel> models = models_of(run);
    std::vector<Section> sections = {universal_section(run, models)};
    for (std::size_t k = 0; k < models.size(); ++k) {
        RunFolder model = read_run_folder((fs::path(run.dir) / models[k].folder).string(),
                                          run.index, run.named_by);
        if (model.manifest.at("kind").get<std::string>() != schema::kind::compare)
            throw InputError(run.named_by + " '" + run.dir + "': model folder '" +
                             models[k].folder + "' is not a compare folder");
        model.id_prefix = figure_prefix(run) + "m" + std::to_string(k + 1) + "_";
        for (Section& s : run_sections(model)) {
            s.title = models[k].folder + ": " + s.title;
            sections.push_back(s);
        }
    }
    sections.push_back(decisions_section(run.manifest));
    return sections;
}

}  // namespace attngeo::reports
