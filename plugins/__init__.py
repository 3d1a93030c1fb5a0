"""Built-in KernelIndex plugins: one package per kernel family, one module per hardware target."""
