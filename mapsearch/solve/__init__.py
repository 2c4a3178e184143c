"""Running the solver: options, user constraints, the solve itself, and explanations."""
