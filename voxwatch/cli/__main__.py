"""`python -m voxwatch.cli`, as the tests and the worker images run the console script."""

import sys

from voxwatch.cli import main

sys.exit(main())
