"""The one thing pyproject.toml cannot say: the optional compiled recording hooks.

``mcpactor.tracing._hooks`` (C) is the recording's per-pass and per-spawn hooks; without
a C compiler the build goes on without it and the Python ones in
``mcpactor/tracing/hooks.py`` run instead (same traces, more of the recorded process's
time: ``benchmarks/README.md``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "mcpactor.tracing._hooks",
            sources=["mcpactor/tracing/_hooks.c"],
            optional=True,
        ),
    ],
)
