"""The compiled part of the package: the store's record check (ADR 0155).

Everything else about the package is in pyproject.toml; setuptools reads both.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "costart.store._chunkcheck",
            sources=["costart/store/_chunkcheck.c"],
            depends=[
                "costart/store/blake2/blake2b-ref.c",
                "costart/store/blake2/blake2.h",
                "costart/store/blake2/blake2-impl.h",
            ],
        )
    ],
)
