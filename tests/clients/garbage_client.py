#!/usr/bin/env python3
"""A broken external lock client for the tests: answers every request with a line that is not JSON."""
import sys

for line in sys.stdin:
    print("OK, you got the lock (not JSON)", flush=True)
