"""Exploration engines that drive the one model: Hypothesis stateful testing (and, later, the
explicit-state and z3 checkers). ``config.py`` builds the model configuration they share."""
