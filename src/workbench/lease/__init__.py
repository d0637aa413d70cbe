"""Slot leases: one rating at a time on a SUT slot."""
