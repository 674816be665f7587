"""`python -m emqlab …` is the `emqlab` command."""

import sys

from .cli import main

sys.exit(main())
