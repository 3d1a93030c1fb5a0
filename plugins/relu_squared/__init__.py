"""ReLU squared: ``relu(x)^2`` element by element, the activation of Primer and of some MLPs."""
