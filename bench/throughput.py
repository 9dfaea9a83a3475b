"""``python -m bench.throughput`` (``make bench``): the learner throughput benchmark.

The benchmark lives in :mod:`bench.perf.throughput`; this module keeps its
short command name.
"""

import sys

from bench.perf.throughput import main

if __name__ == "__main__":
    sys.exit(main())
