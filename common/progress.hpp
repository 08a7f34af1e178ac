// Progress of a long job on stderr, for people and for logs: on a terminal one line redrawn in
// place (a bar with rate and ETA); otherwise plain lines — one at the start, one about every
// 10 s (ATTNGEO_PROGRESS_SECONDS overrides) and a closing summary — so `2>log` can be watched.
// Nothing is printed when quiet. An error printed after it starts on a line of its own.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace attngeo {

class Progress {
  public:
    // `label` names the job ("sweep", "extract"), `unit` what is counted ("trials").
    Progress(std::string label, std::int64_t total, std::string unit, bool quiet);
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    ~Progress();

    // `done` of `total` finished so far (non-decreasing); `detail` is appended to plain lines.
    void update(std::int64_t done, const std::string& detail = "");
    // The closing line: what was done, in how long, and `summary` (e.g. where it was written).
    void finish(const std::string& summary);

  private:
    void print_plain(std::int64_t done, const std::string& detail);
    void draw_bar(std::int64_t done);
    std::string rate_and_eta(std::int64_t done) const;

    std::string label_, unit_;
    std::int64_t total_ = 0;
    bool quiet_ = false, terminal_ = false, bar_open_ = false, finished_ = false;
    double interval_s_ = 10;
    std::chrono::steady_clock::time_point start_, last_print_;
};

// "3m01s", "42s", "1h02m": a duration for people.
std::string format_duration(double seconds);

}  // namespace attngeo
