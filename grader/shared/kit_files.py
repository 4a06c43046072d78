"""Where the kit's data is: `schemas/`, `chart/` and the stub API client, in a wheel or in a checkout.

A wheel carries them inside the `grader` package (`grader/_kit/`, copied there by setup.py at
build time: the two folders whole, and starter/api_client.py alone), found with
importlib.resources; a checkout keeps them at the top of the repository, beside the package. Every
module that reads a schema, the chart or the stub client asks here, so an installed kit and a
checkout behave the same.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["chart_dir", "kit_dir", "schemas_dir", "stub_client", "submissions_dir"]

_PACKED = "_kit"


def kit_dir(name: str) -> Path:
    """The kit's `name` folder ("schemas", "chart" or "starter"): packaged if installed, else the checkout's."""
    packed = resources.files("grader") / _PACKED / name
    if packed.is_dir():
        return Path(str(packed))
    return Path(str(resources.files("grader"))).resolve().parent / name


def schemas_dir() -> Path:
    return kit_dir("schemas")


def chart_dir() -> Path:
    return kit_dir("chart")


def stub_client() -> Path:
    """The stub client of the hosted API (`api_client.py`) that gateways import; the grader puts it on their path."""
    return kit_dir("starter") / "api_client.py"


def submissions_dir() -> Path:
    """The reference submission and the chaff (`submissions/`): beside the package in a checkout only; an
    installed kit has none, and what reads them says so."""
    return Path(__file__).resolve().parents[2] / "submissions"
