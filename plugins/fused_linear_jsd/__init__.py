"""Fused linear JSD: a student's and a teacher's heads and the Jensen-Shannon divergence of their distributions."""
