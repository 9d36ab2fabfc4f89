"""Which edits a person reviews: a seeded sample stratified by method, never one already labelled.

The sample does not depend on the order the items were read in (each method's pool is sorted by key before
its seeded shuffle), so the same items, seed and labels store always give the same page. ``n`` is spread
evenly over the methods (a method with fewer unlabelled edits than its share gives the rest to the others):
a rate per method needs each method's own n, which proportional allocation would starve for rare methods.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from robusteval.perturbations.review.items import ReviewItem
from robusteval.seeding import derive_random


@dataclass(frozen=True)
class Sample:
    """The items to review, in the order shown, and what the sampling left out."""

    items: tuple[ReviewItem, ...]
    seed: int
    available: dict[str, int]  # method -> edits not yet labelled
    skipped_labelled: int  # edits left out because the labels store already has them

    @property
    def sample_id(self) -> str:
        """Names the sample (the page's storage key and export file): a hash of the seed and the items' keys."""
        text = "\n".join([str(self.seed), *(item.key for item in self.items)])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def per_method(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.items:
            counts[item.method] = counts.get(item.method, 0) + 1
        return dict(sorted(counts.items()))


def allocate(n: int, available: dict[str, int]) -> dict[str, int]:
    """``n`` spread as evenly as the pools allow over the methods (sorted by name; the first ones take the
    remainder), never more than a method has."""
    share = {method: 0 for method in sorted(available)}
    left = n
    while left > 0:
        open_methods = [m for m in share if share[m] < available[m]]
        if not open_methods:
            break
        for method in open_methods:
            if left == 0:
                break
            share[method] += 1
            left -= 1
    return share


def sample_items(items: Sequence[ReviewItem], n: int, *, seed: int = 0,
                 labelled: Collection[str] = ()) -> Sample:
    """Up to ``n`` of ``items`` whose key is not in ``labelled``, stratified by method (:func:`allocate`), each
    method's drawn with its own seeded stream, then shown in one seeded shuffled order (so a reviewer does not
    read a method's edits in a block)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    skip = set(labelled)
    pools: dict[str, list[ReviewItem]] = {}
    skipped = 0
    seen: set[str] = set()
    for item in items:
        key = item.key
        if key in seen:
            continue
        seen.add(key)
        if key in skip:
            skipped += 1
            continue
        pools.setdefault(item.method, []).append(item)
    available = {method: len(pool) for method, pool in sorted(pools.items())}
    chosen: list[ReviewItem] = []
    for method, count in allocate(n, available).items():
        pool = sorted(pools[method], key=lambda item: item.key)
        derive_random(seed, "review-sample", method).shuffle(pool)
        chosen.extend(pool[:count])
    chosen.sort(key=lambda item: (item.method, item.key))
    derive_random(seed, "review-order").shuffle(chosen)
    return Sample(tuple(chosen), seed, available, skipped)
