// Progress lines and bars; see progress.hpp.
#include "common/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace attngeo {
namespace {

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// The interval between plain lines: ATTNGEO_PROGRESS_SECONDS when it is a number ≥ 0.
double plain_interval() {
    const char* text = std::getenv("ATTNGEO_PROGRESS_SECONDS");
    if (text == nullptr) return 10;
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    return end != text && *end == '\0' && value >= 0 ? value : 10;
}

}  // namespace

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const long total = std::lround(seconds);
    char text[32];
    if (total >= 3600)
        std::snprintf(text, sizeof text, "%ldh%02ldm", total / 3600, total % 3600 / 60);
    else if (total >= 60)
        std::snprintf(text, sizeof text, "%ldm%02lds", total / 60, total % 60);
    else if (seconds >= 10)
        std::snprintf(text, sizeof text, "%lds", total);
    else
        std::snprintf(text, sizeof text, "%.1fs", seconds);
    return text;
}

Progress::Progress(std::string label, std::int64_t total, std::string unit, bool quiet)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(std::max<std::int64_t>(total, 0)),
      quiet_(quiet),
      terminal_(::isatty(STDERR_FILENO) != 0),
      interval_s_(plain_interval()),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {
    if (quiet_ || terminal_) return;
    std::fprintf(stderr, "[%s] started: %lld %s\n", label_.c_str(), static_cast<long long>(total_),
                 unit_.c_str());
    std::fflush(stderr);
}

Progress::~Progress() {
    if (bar_open_) std::fputc('\n', stderr);  // whatever follows starts on its own line
}

std::string Progress::rate_and_eta(std::int64_t done) const {
    const double elapsed = seconds_between(start_, std::chrono::steady_clock::now());
    const double rate = elapsed > 0 ? done / elapsed : 0;
    std::ostringstream out;
    out.precision(3);
    out << rate << ' ' << unit_ << "/s";
    if (done > 0 && done < total_) out << ", ETA " << format_duration((total_ - done) / rate);
    return out.str();
}

void Progress::print_plain(std::int64_t done, const std::string& detail) {
    std::fprintf(stderr, "[%s] %lld/%lld %s, %s%s%s\n", label_.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), unit_.c_str(),
                 rate_and_eta(done).c_str(), detail.empty() ? "" : "; ", detail.c_str());
    std::fflush(stderr);
}

void Progress::draw_bar(std::int64_t done) {
    constexpr int kWidth = 30;
    const double fraction = total_ > 0 ? static_cast<double>(done) / total_ : 1.0;
    const int filled = static_cast<int>(std::floor(fraction * kWidth));
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r[%s] [%s] %lld/%lld %s, %s\033[K", label_.c_str(), bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), unit_.c_str(),
                 rate_and_eta(done).c_str());
    std::fflush(stderr);
    bar_open_ = true;
}

void Progress::update(std::int64_t done, const std::string& detail) {
    if (quiet_ || finished_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since = seconds_between(last_print_, now);
    if (terminal_) {
        if (since < 0.2 && done < total_) return;
        draw_bar(done);
    } else {
        if (since < interval_s_ || done >= total_) return;  // the summary reports the end
        print_plain(done, detail);
    }
    last_print_ = now;
}

void Progress::finish(const std::string& summary) {
    if (quiet_ || finished_) return;
    finished_ = true;
    if (bar_open_) {
        std::fputc('\n', stderr);
        bar_open_ = false;
    }
    const double elapsed = seconds_between(start_, std::chrono::steady_clock::now());
    std::fprintf(stderr, "[%s] done: %lld %s in %s%s%s\n", label_.c_str(),
                 static_cast<long long>(total_), unit_.c_str(), format_duration(elapsed).c_str(),
                 summary.empty() ? "" : "; ", summary.c_str());
    std::fflush(stderr);
}

}  // namespace attngeo
