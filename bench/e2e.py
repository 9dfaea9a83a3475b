"""``python -m bench.e2e``: the end-to-end benchmark of the service.

The benchmark lives in :mod:`bench.perf.e2e`; this module keeps its short
command name.
"""

import sys

from bench.perf.e2e import main

if __name__ == "__main__":
    sys.exit(main())
