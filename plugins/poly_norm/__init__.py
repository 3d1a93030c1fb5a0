"""PolyNorm: RMS-normalized first, second and third powers of the input, weighted and summed (PolyCom's activation)."""
