#!/usr/bin/env python3
"""A broken external lock client for the tests: reads requests and never answers."""
import sys

for line in sys.stdin:
    pass
