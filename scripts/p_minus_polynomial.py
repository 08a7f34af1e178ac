#!/usr/bin/env python3
# Generates the polynomials theory/bound_kernels.cpp uses for p⁻ before its peak: on each tier
# of t = ξ² (ξ* ² = √2 − 1 ≈ 0.4142), the Chebyshev interpolant of g(t) = exp(-t/2)/(1 + t) in
# powers of s = t − (tier's centre), and the largest relative error of its double Horner
# evaluation. With --moments: the one polynomial in powers of t itself on the whole rising range
# [0, 0.4375] that theory/far_moments.cpp sums through power sums of the gaps. Needs
# python3-mpmath. Usage: python3 scripts/p_minus_polynomial.py [--moments]
import sys

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


def monomial_in_s(chebyshev, half, exact=False):
    """Σ c_j T_j(x) with x = s / half, as Σ m_i s^i (floats, or mpf with exact)."""
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
    scaled = [m / half**i for i, m in enumerate(monomial)]
    return scaled if exact else [float(m) for m in scaled]


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


# The moments' polynomial: degree 16 on [0, 0.4375] (degree 15 is 3.5 units, 14 is 11).
MOMENTS = (0, 0.4375, 16)


def monomial_in_t(low, high, degree):
    """The Chebyshev interpolant on [low, high] in powers of t (re-expanded about 0 in mpf)."""
    centre, half = (low + high) / 2, (high - low) / 2
    in_s = monomial_in_s(chebyshev_coefficients(low, high, degree), half, exact=True)
    in_t = [mp.mpf(0)] * (degree + 1)
    for i, m in enumerate(in_s):
        for k in range(i + 1):
            in_t[k] += m * mp.binomial(i, k) * (-centre) ** (i - k)
    return [float(c) for c in in_t]


def print_moments():
    low, high, degree = (mp.mpf(v) for v in MOMENTS)
    coefficients = monomial_in_t(low, high, int(degree))
    worst = largest_relative_error(coefficients, low, high, 0)
    print(f"// t in [{float(low)}, {float(high)}]: degree {int(degree)} in t; largest relative "
          f"error {mp.nstr(worst, 3)} ({mp.nstr(worst / mp.mpf(2) ** -53, 3)} units of 2^-53)")
    for c in coefficients:
        print(f"    {c!r},")


def main():
    if "--moments" in sys.argv[1:]:
        print_moments()
        return
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
