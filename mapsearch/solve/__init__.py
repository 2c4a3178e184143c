"""Running the solver: the solve itself, explanations of infeasibility, chains of einsums, paths through trees."""
