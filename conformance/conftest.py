"""pytest setup for devprof's conformance suite.

Makes perfetto_check importable from the tests, whatever directory pytest
runs from (scripts/test runs `.venv/bin/python -m pytest conformance -q`
from the repository root).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
