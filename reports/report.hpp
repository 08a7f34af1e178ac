// `attngeo report`: run folders (read through their manifests) to an offline HTML report with
// SVG/PNG figures, the gnuplot scripts and data beside them, and the tables (docs/design.md §8).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/figure.hpp"

namespace attngeo::reports {

// One part of the report: HTML (tables, text) followed by figures.
struct Section {
    std::string title;
    std::string html_before;  // shown above the figures
    std::vector<Figure> figures;
    std::string html_after;  // shown below the figures
};

// A run folder and its manifest.
struct RunFolder {
    std::string dir;
    nlohmann::json manifest;
    int index = 0;                  // position on the command line: prefixes figure ids
    std::string named_by = "--in";  // what named the folder, for messages: a flag or a function
    // What figure ids start with: "run<index>_" when empty; a model folder of a compare set has
    // its own ("run<index>_m<k>_"), so ids stay unique in one page.
    std::string id_prefix;
};
// The figure-id prefix of `run`: its id_prefix, or "run<index>_".
std::string figure_prefix(const RunFolder& run);

// DIR/manifest.json read and checked for a kind with a report (InputError naming the folder
// otherwise); `index` is the folder's position among --in, `named_by` what gave DIR (the --in
// flag; Python's attngeo.read_run).
RunFolder read_run_folder(const std::string& dir, int index, const std::string& named_by = "--in");
// The sections of `run` by its kind, as `attngeo report` builds them (no figure drawn yet): a
// damaged or inconsistent file of the folder is an InputError naming that file where known.
std::vector<Section> run_sections(const RunFolder& run);

// The sections of a run, by the manifest's "kind". To support a new kind of run or figure,
// write one function like these and register it in report.cpp.
std::vector<Section> simulation_sections(const RunFolder& run);
std::vector<Section> sweep_sections(const RunFolder& run);
// `attngeo extract` folders and `attngeo compare` folders (empirical_sections.cpp): the paper's
// Section-4 figures; a compare report includes its extract folder's figures with overlays.
std::vector<Section> extract_sections(const RunFolder& run);
std::vector<Section> compare_sections(const RunFolder& run);
// `attngeo compare` with several --emp folders (compare_set_report.cpp): the universal κ over the
// models (universal_kappa.csv), then each model's compare sections, titled by its folder.
std::vector<Section> compare_set_sections(const RunFolder& run);
// `attngeo truncate` folders (truncation_report.cpp): ΔNLL and KL against N, N*_τ, and for
// scope head each head's ΔNLL against its geometry.
std::vector<Section> truncate_sections(const RunFolder& run);
// `attngeo normalization` folders (normalization_report.cpp): the predecessor paper's figures
// (docs/design.md §14) — d̃(N) against L and N beside a random selection, the critical N against
// L, separability per N across heads, the softmax sensitivity g against T.
std::vector<Section> normalization_sections(const RunFolder& run);
// The truncate folders among `runs` overlaid (models_truncate_delta_nll) when there are at
// least two; empty otherwise. `labels` [runs] as run_labels returns.
std::vector<Section> truncate_overlay_sections(const std::vector<RunFolder>& runs,
                                               const std::vector<std::string>& labels);

// Writes OUT/index.html, OUT/figures/* and OUT/report_files.json (the files this report wrote);
// returns the path of index.html. `labels`: one name per run folder to draw it under in the
// cross-model figures (--label), or empty for the models' names. Files an earlier report listed
// in report_files.json and this one no longer writes are removed (figures of a run no longer
// given); other files in OUT are kept. Throws InputError for a folder without a readable
// manifest or of an unknown kind, and for a wrong number of labels.
std::string write_report(const std::vector<std::string>& run_dirs, const std::string& out_dir,
                         const std::vector<std::string>& labels = {});

// HTML helpers shared by the section builders.
std::string html_escape(const std::string& text);
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);
std::string short_number(double x);  // 6 significant digits for tables (files keep 17)
// A manifest value as text: strings as they are, floats by short_number, the rest as JSON.
std::string json_text(const nlohmann::json& value);
// Table 1 as the run that owns it wrote it (DIR/table1.csv and the manifest's "table1"):
// `where` says where the derivatives were taken (HTML).
std::string table1_html(const std::string& dir, const nlohmann::json& manifest,
                        const std::string& where);
// The "Decisions taken" section: the manifest's "decisions" as a list (empty without any).
Section decisions_section(const nlohmann::json& manifest);
// Only the list of decisions_section, to append another manifest's.
std::string decisions_list(const nlohmann::json& manifest);

}  // namespace attngeo::reports
