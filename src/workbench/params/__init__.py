"""A rating's parameters: the Params and RatingPlan (plan), the validation pass before any host
changes."""
