"""Build hook: the wheel carries the kit's `schemas/`, `chart/` and stub API client inside the `grader` package.

They live at the top of the repository (the candidate and the chart tooling use them there), so
the build copies them to `grader/_kit/`: both folders whole, and of starter/ only `api_client.py`,
which the grader puts on a gateway's path. `grader.shared.kit_files` finds them in either place.
Every other setting is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

KIT_FOLDERS = ("schemas", "chart")
KIT_FILES = ("starter/api_client.py",)


class BuildWithKitFolders(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads them from the checkout
        for name in KIT_FOLDERS:
            target = Path(self.build_lib) / "grader" / "_kit" / name
            shutil.copytree(name, target, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in KIT_FILES:
            target = Path(self.build_lib) / "grader" / "_kit" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(name, target)


setup(cmdclass={"build_py": BuildWithKitFolders})
