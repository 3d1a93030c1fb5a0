"""KTO loss: a policy's linear head scored against a reference model's on unpaired desirable and undesirable text."""
