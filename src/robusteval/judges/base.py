"""What a judge is, how judges combine, and how verdicts are cached in a run.

A *judge* answers one binary question about each item it is given:

* a **reasoning** judge gets a :class:`ReasoningItem` (question, reference response, candidate response) and
  says whether the candidate's reasoning is correct;
* a **semantic** judge gets a :class:`SemanticItem` (original question, perturbed question) and says whether
  the two have the same meaning.

``Verdict.label`` is ``True`` when the property holds (reasoning correct / meaning preserved), ``False`` when
it does not, and ``None`` when the judge **abstained**: it had nothing to decide on (``arith`` with no equation
to check, ``grounding`` with no quantity to ground) or its answer could not be read (an LLM verdict still
unreadable after its re-asks, tied log-probabilities). Every abstention says why in
``detail["abstained"]`` (one line, :attr:`Verdict.abstain_reason`) and keeps the raw output. An abstention is
not a verdict: callers count it apart, never as "correct" nor as "wrong" (the MATCHA metrics never claim a
success on it and report how many there were; ``judges audit`` leaves it out of agreement and kappa). Where a
caller must act on every item it says so with :meth:`Verdict.decided`: the attack treats an abstaining
semantic judge as *meaning changed* (rejects the edit).

Judge spec grammar (``--judge`` / ``--semantic-judge``)::

    spec   := term ("+" term)*              "no" if any term says "no"; else "yes" if any term says "yes";
                                            abstains only when every term abstains
    term   := "vote:" atom ("," atom)*      majority of the atoms that answered; a tie, or no answer, abstains
            | atom
    atom   := "arith"                       deterministic arithmetic checker (reasoning only)
            | "grounding"                   deterministic: quantities not from the question (reasoning only)
            | "none"                        always "same meaning" (semantic only)
            | MODEL-SPEC                    an LLM judge on any backend: hf:PATH, openai:MODEL@URL, ...

``+`` binds loosest, so ``arith+vote:hf:a,hf:b,hf:c`` is the arithmetic check OR-ed (on "wrong") with a
majority vote of three models; where ``arith`` has no equation to check, the vote alone decides. A ``+`` or ``,`` only separates when an atom follows it (a keyword, or a
``kind:`` model prefix), so paths and URLs may contain them as long as no such text follows.

Judges never import a concrete backend: :func:`build_judge` receives a ``backend_loader(spec) -> Backend``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from robusteval.config import did_you_mean
from robusteval.errors import UserError
from robusteval.models.base import Backend
from robusteval.registry import Registry
from robusteval.store.sqlite import RunStore, unit_key
from robusteval.store.stages import register_stage

REASONING = "reasoning"
SEMANTIC = "semantic"
TASKS = (REASONING, SEMANTIC)

JUDGE_STAGE = register_stage("judge", cache=True, summary="judge verdicts, cached by CachedJudge")

BackendLoader = Callable[[str], Backend]


# ----------------------------------------------------------------------------------------------- items
@dataclass(frozen=True)
class ReasoningItem:
    """Is ``candidate``'s reasoning correct? ``reference`` is the clean response it is compared with.

    Responses are the full answer-first completions ("The answer is 18. Janet's ducks ...").
    """

    question: str
    reference: str
    candidate: str


@dataclass(frozen=True)
class SemanticItem:
    """Does ``perturbed`` mean the same as ``original``?"""

    original: str
    perturbed: str


Item = ReasoningItem | SemanticItem
_ITEM_TYPES: dict[str, type] = {REASONING: ReasoningItem, SEMANTIC: SemanticItem}


# ----------------------------------------------------------------------------------------------- verdicts
@dataclass
class Verdict:
    """One judge's answer for one item.

    ``label``: True = property holds, False = it does not, None = the judge abstained (``detail["abstained"]``
    says why). ``judge``: the name of the judge that produced it. ``raw``: the judge's own output (generated
    text, or the log-probabilities it was read from, as JSON). ``detail``: anything else worth keeping (method,
    offending equations, member verdicts of a combination, every attempt of a re-asked LLM judge).
    """

    label: bool | None
    judge: str
    raw: str
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def abstain(cls, judge: str, raw: str, reason: str, detail: dict[str, Any] | None = None) -> Verdict:
        """An abstention (label None) by ``judge``, ``reason`` (one line) kept as ``detail["abstained"]``."""
        return cls(None, judge, raw, {**(detail or {}), "abstained": reason})

    @property
    def parsed(self) -> bool:
        """Whether the judge gave a verdict (did not abstain); the name predates abstentions."""
        return self.label is not None

    @property
    def abstained(self) -> bool:
        return self.label is None

    @property
    def abstain_reason(self) -> str | None:
        """Why the judge abstained (None when it gave a verdict); "no reason recorded" for a
        record made before abstentions had one."""
        if self.label is not None:
            return None
        return str((self.detail or {}).get("abstained") or "no reason recorded")

    def decided(self, default: bool) -> bool:
        """The label, with ``default`` standing in for an abstention (for callers that must act on every item)."""
        return default if self.label is None else self.label

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Verdict:
        return cls(record["label"], record["judge"], record["raw"], dict(record.get("detail") or {}))


# ----------------------------------------------------------------------------------------------- protocol
@runtime_checkable
class Judge(Protocol):
    """Anything that gives one :class:`Verdict` per item, in order."""

    # Read-only members: deterministic judges declare them as class variables, model judges as attributes.
    @property
    def name(self) -> str: ...

    @property
    def task(self) -> str:
        """REASONING or SEMANTIC."""
        ...

    def judge(self, items: Sequence[Any]) -> list[Verdict]: ...


def judge_identity(judge: Judge) -> dict[str, Any]:
    """What determines a judge's verdicts (model, prompt hash, reading method); keys the verdict cache."""
    identity = getattr(judge, "identity", None)
    return dict(identity) if identity else {"name": judge.name, "task": judge.task}


def check_items(task: str, items: Sequence[Any]) -> None:
    expected = _ITEM_TYPES[task]
    for item in items:
        if not isinstance(item, expected):
            raise TypeError(f"a {task} judge takes {expected.__name__} items, got {type(item).__name__}")


# ----------------------------------------------------------------------------------------------- model-free judges
class DeterministicReasoningJudge:
    """Base of the reasoning judges that need no model (``arith``, ``grounding``): one :meth:`verdict` per item.

    Subclasses set ``name`` (the spec atom) and ``version`` (bumped when verdicts change); ``identity`` follows.
    ``deterministic``: :func:`with_cache` leaves them uncached, since recomputing a verdict is cheap.
    """

    name: ClassVar[str]
    version: ClassVar[int] = 1
    task = REASONING
    deterministic = True
    identity: ClassVar[dict[str, Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            cls.identity = {"name": cls.name, "task": REASONING, "version": cls.version}

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        check_items(self.task, items)
        return [self.verdict(item) for item in items]

    def verdict(self, item: ReasoningItem) -> Verdict:
        raise NotImplementedError


def reasoning_only(judge_type: Callable[[], Judge]) -> JudgeFactory:
    """The registry factory of a model-free reasoning judge: builds ``judge_type()``, refuses the semantic task."""
    name = getattr(judge_type, "name", getattr(judge_type, "__name__", "judge"))

    def factory(task: str, spec: str, load: BackendLoader) -> Judge:
        if task != REASONING:
            raise UserError(f"judge '{name}' checks reasoning only; it cannot judge whether two questions mean the same")
        return judge_type()

    return factory


# ----------------------------------------------------------------------------------------------- combinations
class AllMustPass:
    """The ``a+b`` combination: the property fails if any member says it fails.

    For reasoning judges this is "wrong if any member says wrong" (the paper ORs the arithmetic check into the
    LLM judge); for semantic judges "changed if any member says changed". Label: False if any member is False;
    else True if any member is True (members that abstained are left out: ``arith`` with no equation to check
    does not stop the LLM judge from deciding); None (abstained, "all members abstained: <their reasons>") only
    when every member abstained.
    """

    def __init__(self, members: Sequence[Judge]):
        if len(members) < 2:
            raise ValueError("a combination needs at least two judges")
        self.members = list(members)
        self.task = _common_task(self.members)
        self.name = "+".join(m.name for m in self.members)

    @property
    def identity(self) -> dict[str, Any]:
        return {"all_must_pass": [judge_identity(m) for m in self.members]}

    def with_members(self, members: Sequence[Judge]) -> AllMustPass:
        return AllMustPass(members)

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        per_member = [m.judge(items) for m in self.members]
        out = []
        for verdicts in zip(*per_member, strict=True):
            labels = [v.label for v in verdicts]
            label: bool | None = False if False in labels else True if True in labels else None
            extra = {} if label is not None else {"abstained": _all_abstained(verdicts)}
            out.append(_combined(self.name, label, "all_must_pass", verdicts, extra))
        return out


class MajorityVote:
    """The ``vote:a,b,c`` combination: the majority label among members that answered.

    Members that abstained are left out. A tie, or no member answering, abstains (label None, with the reason:
    "tie (1 yes, 1 no)", "all members abstained: ...").
    """

    def __init__(self, members: Sequence[Judge]):
        if len(members) < 2:
            raise ValueError("a vote needs at least two judges")
        self.members = list(members)
        self.task = _common_task(self.members)
        self.name = "vote(" + ",".join(m.name for m in self.members) + ")"

    @property
    def identity(self) -> dict[str, Any]:
        return {"majority_vote": [judge_identity(m) for m in self.members]}

    def with_members(self, members: Sequence[Judge]) -> MajorityVote:
        return MajorityVote(members)

    def judge(self, items: Sequence[Any]) -> list[Verdict]:
        per_member = [m.judge(items) for m in self.members]
        out = []
        for verdicts in zip(*per_member, strict=True):
            yes = sum(v.label is True for v in verdicts)
            no = sum(v.label is False for v in verdicts)
            label = True if yes > no else False if no > yes else None
            extra: dict[str, Any] = {"yes": yes, "no": no}
            if label is None:
                extra["abstained"] = f"tie ({yes} yes, {no} no)" if yes else _all_abstained(verdicts)
            out.append(_combined(self.name, label, "majority_vote", verdicts, extra))
        return out


def _all_abstained(verdicts: Sequence[Verdict]) -> str:
    reasons = list(dict.fromkeys(f"{v.judge}: {v.abstain_reason}" for v in verdicts))
    return "all members abstained: " + "; ".join(reasons)


def _common_task(members: Sequence[Judge]) -> str:
    tasks = {m.task for m in members}
    if len(tasks) != 1:
        raise UserError(f"cannot combine judges of different kinds: {', '.join(sorted(tasks))}")
    return tasks.pop()


def _combined(
    name: str, label: bool | None, rule: str, verdicts: Sequence[Verdict], extra: dict[str, Any] | None = None
) -> Verdict:
    raw = "; ".join(f"{v.judge}: {_short(v.label)}" for v in verdicts)
    detail: dict[str, Any] = {"rule": rule, **(extra or {}), "members": [v.to_record() for v in verdicts]}
    return Verdict(label, name, raw, detail)


def _short(label: bool | None) -> str:
    return "abstained" if label is None else "yes" if label else "no"


# ----------------------------------------------------------------------------------------------- caching
class CachedJudge:
    """Wrap a judge so every verdict is stored in a :class:`RunStore` and never asked for twice.

    Key: ``unit_key(judge identity, item fields)``, stage ``"judge"``. The record keeps the judge's name and
    identity, the item and the verdict (label, raw output, detail), so a run directory shows who judged what.
    Items already stored are served from the store; the rest go to the inner judge in one batch, duplicates
    asked once.
    """

    def __init__(self, inner: Judge, store: RunStore, stage: str = JUDGE_STAGE):
        self.inner = inner
        self.store = store
        self.stage = stage
        self.name = inner.name
        self.task = inner.task

    @property
    def identity(self) -> dict[str, Any]:
        return judge_identity(self.inner)

    def key(self, item: Any) -> str:
        return unit_key(self.stage, self.identity, type(item).__name__, asdict(item))

    def judge(self, items: Sequence[Any], example_id: str | None = None) -> list[Verdict]:
        from robusteval.runner import compute_units, distributed

        check_items(self.task, items)
        keys = [self.key(item) for item in items]
        found: dict[str, Verdict] = {}
        for key in dict.fromkeys(keys):
            record = self.store.get(self.stage, key)
            if record is not None:
                found[key] = Verdict.from_record(record["verdict"])
        todo: dict[str, Any] = {}
        for key, item in zip(keys, items, strict=True):
            if key not in found:
                todo.setdefault(key, item)
        if todo:
            # The compute travels to Ray workers: it holds the inner judge and plain values, never ``self``
            # (whose store is a snapshot of every cached stage).
            inner, name, task, identity = self.inner, self.name, self.task, self.identity

            def compute(batch: list[Any]) -> list[dict[str, Any]]:
                verdicts = inner.judge(batch)
                return [{"judge": name, "task": task, "identity": identity, "item": asdict(item),
                         "verdict": verdict.to_record()} for item, verdict in zip(batch, verdicts, strict=True)]

            # In process the missing items go to the judge in one call; workers share them in small batches.
            batch_size = _DISTRIBUTED_BATCH if distributed() else len(todo)
            compute_units(self.store, self.stage, list(todo.values()), list(todo), compute,
                          id_of=lambda _: example_id, batch_size=batch_size, description=f"judge {self.name}",
                          quiet=len(todo) < 2)
            for key in todo:
                found[key] = Verdict.from_record(self.store.get(self.stage, key)["verdict"])  # type: ignore[index]
        return [found[key] for key in keys]


#: Items per batch when a distributed executor's workers run a judge.
_DISTRIBUTED_BATCH = 8


def with_cache(judge: Judge, store: RunStore, stage: str = JUDGE_STAGE) -> Judge:
    """Cache ``judge``'s model calls in ``store``.

    Combinations are rebuilt with cached members (so a resumed vote re-asks only the members that had not
    answered yet); deterministic judges (``deterministic = True``: ``arith``, ``grounding``, ``none``) are left
    uncached since recomputing them is cheap.
    """
    members = getattr(judge, "members", None)
    if members is not None and hasattr(judge, "with_members"):
        rebuilt: Judge = judge.with_members([with_cache(m, store, stage) for m in members])
        return rebuilt
    if getattr(judge, "deterministic", False) or isinstance(judge, CachedJudge):
        return judge
    return CachedJudge(judge, store, stage)


# ----------------------------------------------------------------------------------------------- registry
JudgeFactory = Callable[..., Judge]
"""``factory(task, atom, backend_loader) -> Judge``; a factory of model judges may also take ``chat=`` (the
``--judge-chat`` setting), ``retries=`` (``--judge-retries``), ``prompt_text=`` and ``prompt_label=``
(``--judge-prompt``), ``prompt_name=`` and ``thinking_budget=`` (``--judge-max-thinking-tokens``), which
:func:`build_judge` passes (when set) only to factories that declare them (``register_judge(options=...)``)."""

MODEL = "model"  # registry key of the factory used for every MODEL-SPEC atom
_BUILTIN_MODULES = (
    "robusteval.judges.arithmetic", "robusteval.judges.grounding", "robusteval.judges.reasoning",
    "robusteval.judges.semantic",
)
JUDGES: Registry[JudgeFactory] = Registry("judge", modules=_BUILTIN_MODULES, entry_points="robusteval.judges")


#: The settings :func:`build_judge` may pass a factory, each only to a factory that declares it takes it.
JUDGE_OPTIONS = frozenset({"chat", "retries", "retry_temperature", "unreadable", "prompt_name", "thinking_budget",
                           "prompt_text", "prompt_label"})
#: What a model judge (an LLM asked with a prompt) takes: every setting above.
MODEL_JUDGE_OPTIONS = tuple(sorted(JUDGE_OPTIONS))


def register_judge(name: str, *, summary: str = "", options: Sequence[str] = ()
                   ) -> Callable[[JudgeFactory], JudgeFactory]:
    """Decorator: ``@register_judge("arith")`` makes the atom ``arith`` build with the decorated factory.

    The name :data:`MODEL` registers the factory for model-spec atoms (anything of the form ``kind:...``).
    ``options``: the keywords of :data:`JUDGE_OPTIONS` the factory takes (declared, so nothing is guessed from
    its signature; a deterministic judge takes none, a model judge :data:`MODEL_JUDGE_OPTIONS`).
    """
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name) or name == "vote":
        raise ValueError(f"judge name {name!r}: use lower-case letters, digits, '-' or '_' (not 'vote')")
    unknown = sorted(set(options) - JUDGE_OPTIONS)
    if unknown:
        raise ValueError(f"judge {name}: unknown options {', '.join(unknown)}; known: {', '.join(sorted(JUDGE_OPTIONS))}")
    return JUDGES.register(name, summary=summary, replace=True, options=frozenset(options))


def _factories() -> dict[str, JudgeFactory]:
    return {entry.name: entry.value for entry in JUDGES.entries()}


_MODEL_PREFIX = r"[a-z][a-z0-9_-]*:"


def _split(text: str, sep: str) -> list[str]:
    """Split at ``sep`` only where an atom (a registered keyword or a ``kind:`` prefix) follows."""
    keywords = "|".join(re.escape(k) for k in sorted(_factories(), key=len, reverse=True) if k != MODEL)
    atom_start = rf"(?:{_MODEL_PREFIX}" + (rf"|(?:{keywords})(?=$|[+,])" if keywords else "") + ")"
    return re.split(rf"{re.escape(sep)}(?={atom_start})", text)


def build_judge(spec: str, backend_loader: BackendLoader, *, task: str = REASONING, chat: bool | None = None,
                prompt_file: str | None = None, retries: int = 0, prompt_name: str | None = None,
                retry_temperature: float | None = None, unreadable: str | None = None,
                thinking_budget: int | None = None) -> Judge:
    """Build a judge for ``task`` ("reasoning" or "semantic") from a spec (grammar in the module docstring).

    ``backend_loader`` turns a model spec into a backend (the CLI passes ``robusteval.models.load_backend``
    with its options bound); each distinct model spec is loaded once per call. ``chat``: LLM judges ask through
    the judge model's chat template (True), as raw text (False), or as before (None: API judges use their chat
    endpoint, log-prob judges the raw prompt). ``prompt_file`` (``--judge-prompt``): a template file replacing
    the built-in prompt (checked by :func:`~robusteval.judges.prompt_files.load_judge_prompt` before any model
    loads; its file name labels it in the identity). ``retries`` (``--judge-retries``): re-asks of an unreadable
    generated verdict before the judge abstains; ``retry_temperature``: their temperature (None: the judge's own);
    ``unreadable``: what a verdict still unreadable becomes (None: an abstention; see judges.llm). ``prompt_name``:
    another built-in prompt (``"reasoning_pair"``). ``thinking_budget`` (``--judge-max-thinking-tokens``): the tokens
    a thinking judge's trace may take before its verdict (None: the judges' default, 2,048). Every LLM atom of the
    spec gets these; judges without a model ignore them, and a plug-in factory gets only the keywords it accepts.
    """
    if task not in TASKS:
        raise ValueError(f"task {task!r}: expected one of {', '.join(TASKS)}")
    if retries < 0:
        raise UserError(f"judge retries: {retries} is negative; give 0 (ask once) or more")
    options: dict[str, Any] = {}
    if chat is not None:
        options["chat"] = chat
    if retries:
        options["retries"] = retries
    if retry_temperature is not None:
        options["retry_temperature"] = retry_temperature
    if unreadable is not None and unreadable != "abstain":
        options["unreadable"] = unreadable
    if prompt_name is not None:
        options["prompt_name"] = prompt_name
    if thinking_budget is not None:
        options["thinking_budget"] = thinking_budget
    if prompt_file is not None:
        from robusteval.judges.prompt_files import load_judge_prompt

        options["prompt_text"] = load_judge_prompt(prompt_file, task)
        options["prompt_label"] = os.path.basename(prompt_file)
    loaded: dict[str, Backend] = {}

    def load(model_spec: str) -> Backend:
        if model_spec not in loaded:
            loaded[model_spec] = backend_loader(model_spec)
        return loaded[model_spec]

    built: list[Judge] = []
    for vote, atoms in _terms(spec):
        members = [_build_atom(atom, task, load, spec, options) for atom in atoms]
        built.append(MajorityVote(members) if vote else members[0])
    return built[0] if len(built) == 1 else AllMustPass(built)


def check_judge_prompt(path: str | None, task: str) -> None:
    """Refuse a ``--judge-prompt`` file that :func:`build_judge` would refuse (None is fine), without loading a
    model: configs call it before a run directory is made."""
    from robusteval.judges.prompt_files import check_judge_prompt as check

    check(path, task)


class _WouldLoad(Exception):
    """Raised by :func:`check_judge_spec`'s loader: the factory got as far as asking for its model."""


def check_judge_spec(spec: str, *, task: str = REASONING) -> None:
    """Refuse, with the error :func:`build_judge` would give, a spec that cannot build, without loading a model.

    Checked: the grammar, unknown judge names, judges of the other kind (``arith`` as a semantic judge), and
    model specs that name no backend kind (``hff:PATH``). Pipelines call it before a run directory is made, so a
    typo leaves nothing behind that a corrected command would be refused as a different run.
    """
    if task not in TASKS:
        raise ValueError(f"task {task!r}: expected one of {', '.join(TASKS)}")

    def refuse(model_spec: str) -> Backend:
        from robusteval.models.registry import parse_spec

        try:
            parse_spec(model_spec)
        except UserError as exc:
            raise UserError(f"judge spec '{spec.strip()}': {exc}") from None
        raise _WouldLoad

    for _, atoms in _terms(spec):
        for atom in atoms:
            with contextlib.suppress(_WouldLoad):
                _build_atom(atom, task, refuse, spec)


def spec_atoms(spec: str) -> list[str]:
    """Every atom of a judge spec, in order, as the grammar splits it (``arith+vote:hf:a,hf:b`` -> ``arith``,
    ``hf:a``, ``hf:b``; a ``+`` or ``,`` inside a path stays there)."""
    return [atom for _, atoms in _terms(spec) for atom in atoms]


def _terms(spec: str) -> list[tuple[bool, list[str]]]:
    """The spec's ``+`` terms as (is a vote, its atoms)."""
    spec = spec.strip()
    if not spec:
        raise UserError("empty judge spec; use arith, grounding, none, a model spec, a+b or vote:a,b,c")
    out = []
    for term in (t.strip() for t in _split(spec, "+")):
        if term.startswith("vote:"):
            atoms = [a.strip() for a in _split(term[len("vote:") :], ",")]
            if len(atoms) < 2:
                raise UserError(f"judge spec '{spec}': vote needs at least two judges (vote:a,b,c)")
            out.append((True, atoms))
        else:
            out.append((False, [term]))
    return out


def _build_atom(atom: str, task: str, load: BackendLoader, spec: str, options: dict[str, Any] | None = None
                ) -> Judge:
    if not atom:
        raise UserError(f"judge spec '{spec.strip()}': empty judge name")
    if atom.startswith("vote:"):
        raise UserError(f"judge spec '{spec.strip()}': a vote cannot be nested inside another vote")
    factories = _factories()
    name = atom if atom in factories or not re.match(_MODEL_PREFIX, atom) else MODEL
    factory = factories.get(name)
    if factory is None:
        names = sorted(k for k in factories if k != MODEL)
        # The grammar splits only before a known atom: 'grounding,embeded' reaches here whole; name the misspelt part.
        unknown = next((p for p in re.split(r"[+,]", atom) if p.strip() and p.strip() not in factories), atom).strip()
        raise UserError(f"judge spec '{spec.strip()}': unknown judge '{unknown}'{did_you_mean(unknown, names)}; use "
                        f"{', '.join(names)}, or a model spec (hf:PATH, openai:MODEL@URL)")
    takes = JUDGES.get(name).meta.get("options", frozenset())
    accepted = {k: v for k, v in (options or {}).items() if k in takes}
    return factory(task, atom, load, **accepted)
