"""Distillation with cosine similarity: a student's head learns from its labels and from the direction of a teacher's logits."""
