"""Extract final answers from model completions and compare them with gold answers.

The goal is to grade the way a careful human would: "$1,234.50" is 1234.5, "is 18." ends with the number
18 (not 18.0-something), "1, 2" is two numbers while "1,234,567" is one, "\\frac{1}{2}" equals "0.5" and
"\\sqrt{8}" equals "2\\sqrt{2}".

Public API:

* :func:`extract_answer_first` / :func:`split_answer_and_cot` for answer-first chain-of-thought completions
  (" The answer is 18. Because ...");
* :func:`extract_final_answer` for free-form math solutions (last ``\\boxed{}``, else last "the answer is",
  else last number);
* :func:`normalize_number`, :func:`normalize_yesno`, :func:`parse_number`;
* :func:`answers_match`, dispatching on :data:`robusteval.data.example.AnswerType`;
* :func:`grade_answer`: the same verdict by a chosen grader (``builtin`` or the optional ``math-verify``),
  with the grader that decided (:mod:`.graders`).

Symbolic comparison uses sympy through a small hand-written LaTeX tokenizer and recursive-descent parser
(never ``eval``/``exec``, and no dependency on ``sympy.parsing.latex``/antlr4). Sympy runs in a lazily
started worker process that is killed when it exceeds the timeout, because simplifying hostile input
(``2^{10^{10}}``) can spend minutes inside C code where no signal or thread can interrupt it. The first
symbolic comparison pays ~0.5 s to start the worker (outside the timeout); numeric and string-identical
answers never need it. Where no worker can be started (Windows), sympy runs in-process, bounded by
SIGALRM on the main thread and unbounded on other threads.

Modules, one concern each:

* :mod:`.markup`: text preparation (unicode minus signs, vulgar fractions, ``\\boxed{}``, markup stripping);
* :mod:`.numbers`: finding, parsing and comparing numbers; :mod:`.wordnumbers`: spelled-out numbers;
  :mod:`.yesno`: yes/no answers;
* :mod:`.phrases`: "The answer is" and the end of its sentence; :mod:`.extract`: answer extraction;
* :mod:`.textnorm`: the normal form of text and label answers;
* :mod:`.latex`: LaTeX -> plain text; :mod:`.symbolic`: tokenizer, parser and sympy equality;
* :mod:`.setforms`: sets, lists and ratios written other ways (membership, inequalities, unions, ±, ...);
* :mod:`.compare`: :func:`answers_match` and the math comparison;
* the timeout-bounded worker processes are :mod:`robusteval.workers`; shared character tables are
  :mod:`robusteval.text.normalise`.

Every name this module held before it became a package (private helpers included) is still importable from
here, except ``_pool``, the worker pool's mutable state, which lives in :mod:`robusteval.workers`, and
``_WORD_NUM_RE`` and ``_word_number``, replaced by the grammar of :mod:`.wordnumbers` (use
:func:`~.wordnumbers.find_word_number`).
"""

# Besides the public API (``__all__``), the private helpers are re-exported (hence the noqa): whatever was
# importable from robusteval.data.answers before the split still is.
from robusteval.data.answers.compare import (  # noqa: F401
    _ASSIGN_RE,
    _MAX_MATH_CHARS,
    _clean_math,
    _composite_match,
    _exact_text,
    _math_match,
    _Pending,
    _perfect_matching,
    _resolve,
    _split_composite,
    answers_match,
)
from robusteval.data.answers.extract import (  # noqa: F401
    _answer_from_segment,
    _clean_segment,
    _token_text,
    extract_answer_first,
    extract_final_answer,
    split_answer_and_cot,
)
from robusteval.data.answers.graders import MATH_GRADERS, Verdict, check_math_grader, grade_answer
from robusteval.data.answers.latex import (  # noqa: F401
    _CMD_OPS,
    _CONSTS,
    _FUNCS,
    _GREEK,
    _SKIP_CMDS,
    Token,
    _latex_to_plain,
    _Unsupported,
)
from robusteval.data.answers.markup import (  # noqa: F401
    _BOXED_RE,
    _WRAP_CMDS,
    _WRAP_RE,
    _find_braced,
    _last_boxed,
    _prep_full,
    _prep_light,
    _strip_markup,
    _unwrap_commands,
    _vulgar_sub,
)
from robusteval.data.answers.numbers import (  # noqa: F401
    _DEN_RE,
    _EXP_RE,
    _HEAD_RE,
    _LATEX_FRAC_RE,
    _LATEX_MIXED_RE,
    _MATH_WORDS,
    _MAX_EXACT_EXP,
    _MIXED_RE,
    _PCT_RE,
    _TEN_RE,
    _UDEC,
    _UDEC_RE,
    _UINT,
    _UNITS_TAIL_RE,
    _first_number,
    _fraction,
    _iter_numbers,
    _Num,
    _numbers_equal,
    _parse_at,
    _parse_number_strict,
    _scale10,
    _to_float,
    normalize_number,
    parse_number,
)
from robusteval.data.answers.phrases import (  # noqa: F401
    _ABBREVIATIONS,
    _ANSWER_PHRASE_RE,
    _CLOSERS,
    _sentence_end,
)
from robusteval.data.answers.symbolic import (  # noqa: F401
    _MAX_TOKENS,
    _TOKEN_RE,
    _Parser,
    _symbolic_equal_batch,
    _symbolic_equal_one,
    _sympy_expr_equal,
    _to_tokens,
    _tokenize,
)
from robusteval.data.answers.textnorm import _BRACKETS, _normalize_text, _outer_pair  # noqa: F401
from robusteval.data.answers.wordnumbers import (  # noqa: F401
    _UNIT_WORDS,
    _WORD_TENS,
    _WORD_UNITS,
    WordNumber,
    find_word_number,
)
from robusteval.data.answers.yesno import _YESNO, _YESNO_RE, normalize_yesno  # noqa: F401
from robusteval.text.normalise import MINUS_TABLE as _MINUS_TABLE  # noqa: F401
from robusteval.text.normalise import VULGAR_RE as _VULGAR_RE  # noqa: F401
from robusteval.workers import (  # noqa: F401
    _BOOT,
    _MAX_WORKERS,
    _PACKAGE_ROOT,
    _STARTUP_TIMEOUT,
    _AlarmTimeout,
    _Pool,
    _reset_pool_in_child,
    _shutdown_pool,
    _Worker,
    _worker_main,
)
from robusteval.workers import call_inline as _call_inline  # noqa: F401
from robusteval.workers import run_with_timeout as _run_with_timeout  # noqa: F401

__all__ = [
    "MATH_GRADERS",
    "Verdict",
    "answers_match",
    "check_math_grader",
    "extract_answer_first",
    "extract_final_answer",
    "grade_answer",
    "normalize_number",
    "normalize_yesno",
    "split_answer_and_cot",
]
