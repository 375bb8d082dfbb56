"""``python -m facebias.cli``: the ``facebias`` command."""

from facebias.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
