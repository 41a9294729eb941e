"""Reference Triton kernels, one module per operation, each in reading order."""
