"""The MATCHA paper's four error types, named once: the grounding checker reports two of them, and
:mod:`robusteval.judges.errortypes` (which runs that checker) classifies into all four."""

WRONG_CALCULATION = "wrong calculation"
WRONG_REASONING = "wrong reasoning"
WRONG_INFORMATION = "wrong information"
IRRELEVANT_INFORMATION = "irrelevant information"
ERROR_TYPES = (WRONG_CALCULATION, WRONG_REASONING, WRONG_INFORMATION, IRRELEVANT_INFORMATION)
UNCLASSIFIED = "unclassified"
#: Every value ``ErrorType.category`` takes, in the order summaries list them.
CATEGORIES = (*ERROR_TYPES, UNCLASSIFIED)
