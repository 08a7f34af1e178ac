// Closed forms of the cosine model of Assumption 2 that the generator, compare's fits and the
// planted-recovery check all need: the Kac–Murdock–Szegő inverse sum, the largest feasible
// sink cosine, and what a requested cosine becomes after normalisation at finite d.
#pragma once

namespace attngeo::theory {

// 1ᵀK⁻¹1 = (L(1−r) + 2r)/(1+r) for the Kac–Murdock–Szegő matrix K_ij = r^{|i−j|} of size L.
double kms_inverse_sum(int L, double r);
// The largest |ρ0| for which the exact sink construction exists: 1/√(1ᵀK⁻¹1).
double max_feasible_rho0(int L, double beta);

// E cos(g_i, g_j)/(‖g_i‖‖g_j‖) for Gaussian vectors in R^d with correlation ρ:
// ρ·(2/d)(Γ((d+1)/2)/Γ(d/2))²·₂F₁(½,½; d/2+1; ρ²) — what a requested cosine ρ becomes after
// normalisation at finite d (→ ρ as d → ∞).
double expected_normalized_cosine(double rho, int d);

}  // namespace attngeo::theory
