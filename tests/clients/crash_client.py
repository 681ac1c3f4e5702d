#!/usr/bin/env python3
"""A broken external lock client for the tests: answers the first request, then dies on the second."""
import json, os, sys

line = sys.stdin.readline()
print(json.dumps({"ok": False, "error": "held"}), flush=True)
sys.stdin.readline()
os._exit(3)
