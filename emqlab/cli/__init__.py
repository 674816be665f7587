"""The `emqlab` command: `main` assembles one parser from the verb families, each in a module of its
own; `python -m emqlab`, `python -m emqlab.cli` and the `emqlab` script all call it."""

from .command import main

__all__ = ["main"]
