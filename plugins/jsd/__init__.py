"""Jensen-Shannon divergence: a student's and a teacher's log-probabilities against their mixture, per token."""
