"""Softmax over the last dimension of a matrix."""
