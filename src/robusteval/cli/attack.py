"""``robusteval attack matcha``: answer/reasoning misalignment attacks (token or embedding level)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from robusteval.attacks.matcha.run import MatchaConfig, MatchaRunner
from robusteval.attacks.matcha.token import VARIANTS
from robusteval.cli.common import (
    add_dataset_options,
    add_model_options,
    build_backend,
    data_identity,
    load_examples,
)
from robusteval.cli.eval_cmd import DATASETS, exemplar_source, exemplars_for
from robusteval.cli.main import add_command, required_option
from robusteval.judges import REASONING, SEMANTIC, ReasoningItem, SemanticItem, build_judge, with_cache
from robusteval.lifecycle import open_run
from robusteval.metrics.matcha import matcha_metrics
from robusteval.models import Backend
from robusteval.report.tables import print_summary_table
from robusteval.store import RunStore, unit_key

OUTCOME_STAGE = "matcha_outcome"


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser(
        "attack", help="white-box and black-box attacks", description="Attacks on a model.",
        epilog="example:\n  robusteval attack matcha --help", formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = group.add_subparsers(dest="attack_command", metavar="ATTACK", required=True)
    parser = add_command(
        sub,
        "matcha",
        help="MATCHA: keep the answer, break the reasoning (token or embedding level)",
        description="Answer/reasoning misalignment attack on answer-first chain-of-thought (MATCHA). Attacks the "
        "questions the model answers correctly (--target-answer gold) or keeps the model's own clean answer "
        "(--target-answer clean), perturbs only the question, and judges the new reasoning. Loss: "
        "L_opt = L_c - lambda*L_a. Paper defaults per dataset: a=0.2, k=0.5/0.25/0.5 and eps=0.02/0.005/0.03 "
        "for singleeq/gsm8k/strategyqa, j=5 steps, 256 new tokens.",
        example="robusteval attack matcha --model hf:./tiny-llama --dataset gsm8k \\\n"
        "    --data-file ../shared/data/gsm8k/test.jsonl --level token --target-answer clean \\\n"
        "    --judge arith --semantic-judge none --limit 5 --out runs/matcha-token",
    )
    add_model_options(parser)
    add_dataset_options(parser, DATASETS)
    add_matcha_options(parser)
    required_option(parser, "--out", metavar="DIR", help="run directory (re-run the same command to resume)")
    parser.set_defaults(func=run)
    from robusteval.cli.wordimportance import register_wordimportance

    register_wordimportance(sub)


def add_matcha_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--level", choices=["token", "embedding"], default="token")
    parser.add_argument("--variant", choices=list(VARIANTS), default="full",
                        help="full, or a baseline: random-insert, random-locs, cot-loss-only, gcg-suffix")
    parser.add_argument("--judge", default="arith", metavar="SPEC|arith",
                        help="reasoning judge: arith, a model spec, A+B (wrong if either says wrong), vote:A,B,C")
    parser.add_argument("--semantic-judge", default="none", metavar="SPEC|none",
                        help="judge that must accept each token replacement as meaning-preserving")
    parser.add_argument("--target-answer", choices=["gold", "clean"], default="gold",
                        help="gold: attack correctly answered questions; clean: keep the model's own answer")
    parser.add_argument("--insert-ratio", type=float, default=None, help="a: inserted tokens per question token (0.2)")
    parser.add_argument("--topk-ratio", type=float, default=None, help="k: share of inserted positions replaced per step")
    parser.add_argument("--epsilon", type=float, default=None, help="embedding level: eps as a fraction of the embedding scale")
    parser.add_argument("--step-fraction", type=float, default=None, help="embedding level: PGD step as a fraction of eps (0.25)")
    parser.add_argument("--no-random-start", dest="random_start", action="store_false",
                        help="embedding level: start PGD at the clean input (its gradient there is exactly zero)")
    parser.add_argument("--steps", type=int, default=None, help="j: optimisation steps (5)")
    parser.add_argument("--n-candidates", type=int, default=None, help="replacement tokens re-scored per position (8)")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--exemplars", default=None, metavar="math|yesno|PATH")
    parser.add_argument("--seed", type=int, default=0)


def config_from_args(args: argparse.Namespace) -> MatchaConfig:
    return MatchaConfig.for_dataset(
        args.dataset,
        level=args.level,
        variant=args.variant,
        insert_ratio=args.insert_ratio,
        topk_ratio=args.topk_ratio,
        eps_fraction=args.epsilon,
        step_fraction=args.step_fraction,
        random_start=args.random_start,
        steps=args.steps,
        n_candidates=args.n_candidates,
        max_new_tokens=args.max_new_tokens,
        target_answer=args.target_answer,
        seed=args.seed,
    )


def judge_functions(
    store: RunStore, reasoning_spec: str, semantic_spec: str, load: Callable[[str], Backend]
) -> tuple[Any, Any, dict[str, str]]:
    """Adapters from the judges package to the attack runner; every model verdict is cached in ``store``."""
    reasoning = with_cache(build_judge(reasoning_spec, load, task=REASONING), store)
    semantic = with_cache(build_judge(semantic_spec, load, task=SEMANTIC), store)

    def judge_reasoning(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        verdicts = reasoning.judge([ReasoningItem(q, ref, cand) for q, ref, cand in items])
        return [{"reasoning_correct": v.label, **v.to_record()} for v in verdicts]

    def judge_semantic(original: str, perturbed: str) -> dict[str, Any]:
        verdict = semantic.judge([SemanticItem(original, perturbed)])[0]
        # An unreadable semantic verdict rejects the replacement: meaning preservation is never assumed.
        return {"same_meaning": verdict.decided(False), **verdict.to_record()}

    return judge_reasoning, judge_semantic, {"reasoning": reasoning.name, "semantic": semantic.name}


def memoised_loader(args: argparse.Namespace, shared: dict[str, Backend]) -> Callable[[str], Backend]:
    """Build judge backends with the run's options; a judge naming the attacked model reuses it."""

    def load(spec: str) -> Backend:
        if spec not in shared:
            shared[spec] = build_backend(spec, args)
        return shared[spec]

    return load


def run(args: argparse.Namespace) -> int:
    examples = load_examples(args)
    prompt = exemplars_for(args, examples[0].answer_type)
    config = config_from_args(args)
    config.validate()
    identity = {
        "command": "attack matcha",
        "model": args.model,
        **data_identity(args),
        "exemplars": exemplar_source(args, examples[0].answer_type),
        "answer_type": examples[0].answer_type,
        "prefix_hash": unit_key(prompt.prefix),
        "judge": args.judge,
        "semantic_judge": args.semantic_judge,
        "config": vars(config),
    }
    info = {"limit": args.limit, "batch_size": args.batch_size}
    with open_run(args.out, identity, info=info, load=lambda: build_backend(args.model, args)) as (store, backend):
        load = memoised_loader(args, {args.model: backend})
        judge_reasoning, judge_semantic, judge_names = judge_functions(store, args.judge, args.semantic_judge, load)
        runner = MatchaRunner(backend, store, prompt, config, reasoning_judge=judge_reasoning,
                              semantic_judge=judge_semantic, batch_size=args.batch_size)
        clean = runner.clean_records(examples)
        attacked = runner.judge(runner.attack_records(examples, clean))
        summary = summarise(store, backend.name, args.dataset, config, judge_names, clean, attacked, runner)
    print_summary_table(
        f"MATCHA {config.level}-level ({config.variant}), target answer: {config.target_answer}",
        [summary], ["model", "dataset", "n", "n_correct", "acc", "n_attacked", "ur", "sr", "wr"],
    )
    print(f"judges: reasoning={judge_names['reasoning']}, semantic={judge_names['semantic']}")
    print(f"run directory: {args.out}")
    return 0


def summarise(
    store: RunStore,
    model_name: str,
    dataset: str,
    config: MatchaConfig,
    judge_names: dict[str, str],
    clean: list[dict[str, Any]],
    attacked: list[dict[str, Any]],
    runner: MatchaRunner,
) -> dict[str, Any]:
    """Per-example outcome records (stage ``matcha_outcome``) and summary.json."""
    by_id = {r["id"]: r for r in attacked}
    rows = []
    for record in clean:
        result = by_id.get(record["id"])
        ok, reason = runner.attackable(record)
        row = {
            "id": record["id"],
            # ACC is always against the gold answer, whatever the attack target.
            "clean_correct": bool(record["correct"]),
            "attacked": result is not None,
            "skip_reason": None if ok else reason,
            **({k: v for k, v in result.items() if k != "attacked"} if result else {}),
        }
        rows.append(row)
        store.put(OUTCOME_STAGE, unit_key(OUTCOME_STAGE, record["id"]), row, example_id=record["id"])
    metrics = matcha_metrics(rows)
    summary = {
        "model": model_name,
        "dataset": dataset,
        "level": config.level,
        "variant": config.variant,
        "target_answer": config.target_answer,
        "judges": judge_names,
        "hyperparameters": vars(config),
        **metrics,
    }
    if config.level == "embedding" and attacked:
        summary["max_abs_delta"] = max(r["max_abs_delta"] for r in attacked)
        summary["epsilon_mean"] = sum(r["epsilon"] for r in attacked) / len(attacked)
    store.write_summary(summary)
    return summary
