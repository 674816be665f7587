"""`python -m emqlab.cli …` is the `emqlab` command."""

import sys

from . import main

sys.exit(main())
