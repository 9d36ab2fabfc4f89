"""A third-party robusteval plugin, as a package outside robusteval would write it (tests/plugins/test_plugins.py).

It adds one of each kind through robusteval's entry-point groups: a method (``first-word``: is the first word the
model says the gold label?), a perturbation (``C-upper``), a judge (``same-length``), a dataset format
(``lines``: one ``question<TAB>answer`` per line) and a backend (``echo:WORD``: answers WORD to everything).
Nothing in robusteval names any of them.
"""
