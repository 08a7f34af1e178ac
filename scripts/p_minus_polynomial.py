#!/usr/bin/env python3
# Generates the polynomials theory/bound_kernels.cpp uses for p⁻ before its peak: on each tier
# of t = ξ² (ξ* ² = √2 − 1 ≈ 0.4142), the Chebyshev interpolant of g(t) = exp(-t/2)/(1 + t) in
# powers of s = t − (tier's centre), and the largest relative error of its double Horner
# evaluation. Needs python3-mpmath. Usage: python3 scripts/p_minus_polynomial.py
import mpmath as mp

mp.mp.dps = 60
# (low t, high t, degree): the lowest degree within 2 units of 2^-53 on each tier.
TIERS = [(0, 0.0025, 5), (0, 0.11, 10), (0.11, 0.4375, 14)]


def g(t):
    return mp.exp(-t / 2) / (1 + t)


def chebyshev_coefficients(low, high, degree):
    centre, half = (low + high) / 2, (high - low) / 2
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / (degree + 1)) for k in range(degree + 1)]
    values = [g(centre + half * x) for x in nodes]
    coefficients = []
    for j in range(degree + 1):
        total = sum(values[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / (degree + 1))
                    for k in range(degree + 1))
        coefficients.append(total * 2 / (degree + 1) / (2 if j == 0 else 1))
    return coefficients


def monomial_in_s(chebyshev, half):
    """Σ c_j T_j(x) with x = s / half, as Σ m_i s^i."""
    degree = len(chebyshev) - 1
    polynomials = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for _ in range(2, degree + 1):
        last, before = polynomials[-1], polynomials[-2]
        following = [mp.mpf(0)] + [2 * v for v in last]
        for i, v in enumerate(before):
            following[i] -= v
        polynomials.append(following)
    monomial = [mp.mpf(0)] * (degree + 1)
    for j, c in enumerate(chebyshev):
        for i, v in enumerate(polynomials[j]):
            monomial[i] += c * v
    return [float(m / half**i) for i, m in enumerate(monomial)]


def largest_relative_error(coefficients, low, high, centre, samples=20000):
    worst = mp.mpf(0)
    for k in range(samples + 1):
        t = float(low) + (float(high) - float(low)) * k / samples
        s = t - float(centre)
        value = coefficients[-1]
        for c in reversed(coefficients[:-1]):
            value = value * s + c
        exact = g(mp.mpf(t))
        worst = max(worst, abs(mp.mpf(value) - exact) / exact)
    return worst


def main():
    for low, high, degree in TIERS:
        low, high = mp.mpf(low), mp.mpf(high)
        centre = (low + high) / 2
        coefficients = monomial_in_s(chebyshev_coefficients(low, high, degree), (high - low) / 2)
        worst = largest_relative_error(coefficients, low, high, centre)
        print(f"// t in [{float(low)}, {float(high)}]: degree {degree} in s = t - "
              f"{float(centre)!r}; largest relative error {mp.nstr(worst, 3)} "
              f"({mp.nstr(worst / mp.mpf(2) ** -53, 3)} units of 2^-53)")
        for c in coefficients:
            print(f"    {c!r},")


if __name__ == "__main__":
    main()
