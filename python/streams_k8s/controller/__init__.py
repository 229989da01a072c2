"""Controllers of the instance operator and the pure builders they use."""
