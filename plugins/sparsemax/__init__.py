"""Sparsemax: each row projected onto the probability simplex, a softmax whose small entries are exactly zero."""
