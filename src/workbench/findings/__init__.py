"""What a rating's records say, as the workflows store and act on it: the trials' validation,
Auto-pilot's warnings, the bottleneck, the latency split, the load curve and its ORT, tenant B's
figures, the regression and change-point verdicts, and their one-line texts. Pure functions of
records; the reports and plots that show them are analysis/ at the repository's top."""
