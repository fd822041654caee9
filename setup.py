"""What pyproject.toml cannot say: the top-level ``presets/`` folder ships inside the package.

The repository keeps the built-in presets at the top (``presets/``, beside ``core/``); an installed package has
no such folder, so the build maps it to ``core/builtin_presets/`` and ``core.presets`` looks there first.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["core", "core.*"], exclude=["*.__pycache__"]), "core.builtin_presets"],
    package_dir={"core.builtin_presets": "presets"},
    package_data={
        "core.versions": ["*.json", "profiles/*.json"],
        "core.builtin_presets": ["*.json", "README.md"],
    },
)
