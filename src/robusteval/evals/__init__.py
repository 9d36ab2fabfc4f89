"""Evaluations that run a model over a dataset (no attack): answer-first accuracy."""
