"""The GPU bench's parts (bench/gpu_bench.py is its command line): the model and its real tokenizer (``model``),
shared helpers (``common``), decode speed and the floor (``decode``), MATCHA and eval throughput (``attack``),
the bench's report (``report``), and issue 29's one-call proof (``proof``, read back by ``proof_report``)."""
