# SPDX-License-Identifier: BSD-3-Clause
# The interop lab's suite (tests/interop/lab.sh runs it in its venv): each test
# may record what it saw with `record(section, key, value)`; the records and
# every test's outcome go to HDAL_INTEROP_RESULTS (JSON), which report.py turns
# into the matrix of docs/interop.md.
import json
import os
import platform

import pytest

_records = {"versions": {"Python": platform.python_version()}}
_outcomes = {}


def record(section, key, value):
    _records.setdefault(section, {})[key] = value


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" or (rep.when == "setup" and rep.outcome != "passed"):
        what = "xfailed" if hasattr(rep, "wasxfail") and rep.skipped else rep.outcome
        reason = getattr(rep, "wasxfail", "") or (str(rep.longrepr[2]) if rep.skipped and isinstance(
            rep.longrepr, tuple) else "")
        _outcomes[item.nodeid] = {"outcome": what, "reason": reason}


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("HDAL_INTEROP_RESULTS")
    if not path:
        return
    with open(path, "w") as f:
        json.dump({"records": _records, "outcomes": _outcomes}, f, indent=1, sort_keys=True, default=str)
