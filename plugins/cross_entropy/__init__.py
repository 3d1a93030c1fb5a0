"""Cross entropy: the mean negative log-likelihood of each token's target under the softmax of its logits."""
