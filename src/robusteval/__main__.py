"""``python -m robusteval``: the same command as ``robusteval``."""

from robusteval.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
