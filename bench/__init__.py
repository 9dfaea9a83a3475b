"""Benchmarks run by command (``make bench``), never by the test suite."""
