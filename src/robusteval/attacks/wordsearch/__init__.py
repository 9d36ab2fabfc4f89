"""The word-importance search, a component two methods share: ``oracle`` (the goal, confidence estimators, query
budget and memo) and ``search`` (word ranking and the perturbation search on one example, ``attack_example``).
The hard-label attack (:mod:`robusteval.attacks.wordimportance`) runs it over a dataset's examples; the
adversarial prompt search (:mod:`robusteval.evals.prompt_robustness.search`) over an instruction's words. No
method of its own: nothing registers here."""
