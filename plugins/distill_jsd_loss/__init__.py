"""Distillation with JSD: a student's head learns from its labels and from a larger teacher's distribution."""
