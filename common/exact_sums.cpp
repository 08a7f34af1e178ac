// Fixed-point exact sums and Student-t estimates; see sums.hpp.
#include "common/exact_sums.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attngeo {

std::string to_string_int128(Int128 value) {
    if (value == 0) return "0";
    const bool negative = value < 0;
    UInt128 magnitude = negative ? -static_cast<UInt128>(value) : static_cast<UInt128>(value);
    std::string digits;
    while (magnitude > 0) {
        digits.push_back(static_cast<char>('0' + static_cast<int>(magnitude % 10)));
        magnitude /= 10;
    }
    if (negative) digits.push_back('-');
    std::reverse(digits.begin(), digits.end());
    return digits;
}

Int128 parse_int128(const std::string& text) {
    std::size_t i = 0;
    const bool negative = !text.empty() && text[0] == '-';
    if (negative) i = 1;
    if (i == text.size()) throw std::invalid_argument("'" + text + "' is not an integer");
    UInt128 value = 0;
    for (; i < text.size(); ++i) {
        if (text[i] < '0' || text[i] > '9')
            throw std::invalid_argument("'" + text + "' is not an integer");
        const UInt128 next = value * 10 + static_cast<unsigned>(text[i] - '0');
        if (next / 10 != value) throw std::invalid_argument("'" + text + "' overflows 128 bits");
        value = next;
    }
    if (value > static_cast<UInt128>(std::numeric_limits<Int128>::max())) {
        throw std::invalid_argument("'" + text + "' overflows 128 bits");
    }
    return negative ? -static_cast<Int128>(value) : static_cast<Int128>(value);
}

void MomentSums::add(double x) {
    const auto q = static_cast<std::int64_t>(std::llround(x * kFixedPointScale));
    ++count;
    sum += q;
    sum_squares += static_cast<Int128>(q) * q;
}

void MomentSums::merge(const MomentSums& other) {
    count += other.count;
    sum += other.sum;
    sum_squares += other.sum_squares;
}

bool MomentSums::operator==(const MomentSums& other) const {
    return count == other.count && sum == other.sum && sum_squares == other.sum_squares;
}

namespace {
constexpr long double kExactScale = 0x1p64L;
constexpr Int128 kExactLimit = static_cast<Int128>(1) << 126;  // 2⁶² in fixed point
}  // namespace

void ExactSum::add(double x) {
    if (!std::isfinite(x) || std::fabs(x) >= 0x1p62)
        throw std::overflow_error("ExactSum::add: addend " + std::to_string(x) +
                                  " is not finite or exceeds 2^62");
    // x·2⁶⁴ is exact in long double (a power-of-two scale); one rounding to the integer.
    const Int128 q =
        static_cast<Int128>(std::nearbyintl(static_cast<long double>(x) * kExactScale));
    fixed += q;
    if (fixed >= kExactLimit || fixed <= -kExactLimit)
        throw std::overflow_error("ExactSum::add: running sum exceeds 2^62");
}

void ExactSum::merge(const ExactSum& other) {
    fixed += other.fixed;
    if (fixed >= kExactLimit || fixed <= -kExactLimit)
        throw std::overflow_error("ExactSum::merge: sum exceeds 2^62");
}

double ExactSum::value() const {
    // |fixed| < 2¹²⁶ converts to long double with one rounding (64-bit mantissa); dividing by a
    // power of two is exact, and the final conversion to double rounds once more.
    return static_cast<double>(static_cast<long double>(fixed) / kExactScale);
}

Estimate estimate(const MomentSums& s) {
    Estimate e;
    e.count = s.count;
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    if (s.count == 0) {
        e.mean = e.se = e.ci_lo = e.ci_hi = nan;
        return e;
    }
    const long double scale = kFixedPointScale;
    e.mean = static_cast<double>(static_cast<long double>(s.sum) / (scale * s.count));
    if (s.count < 2) {
        e.se = e.ci_lo = e.ci_hi = nan;
        return e;
    }
    // T·Σq² − (Σq)² is computed exactly in 128 bits, then scaled once.
    const Int128 spread = static_cast<Int128>(s.count) * s.sum_squares - s.sum * s.sum;
    const long double variance =
        static_cast<long double>(spread) /
        (static_cast<long double>(s.count) * (s.count - 1) * scale * scale);
    e.se = static_cast<double>(std::sqrt(std::max(variance, 0.0L) / s.count));
    const boost::math::students_t_distribution<double> t(static_cast<double>(s.count - 1));
    const double t975 = boost::math::quantile(t, 0.975);
    e.ci_lo = e.mean - t975 * e.se;
    e.ci_hi = e.mean + t975 * e.se;
    return e;
}

}  // namespace attngeo
