"""Text helpers shared across robusteval's packages (answer grading, judges): see :mod:`.normalise`."""
