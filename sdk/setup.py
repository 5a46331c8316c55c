"""The SDK's one compiled part: ``weir._records_native``, the record codec's per-record loops in C.

Everything else about the distribution is in pyproject.toml. The extension is optional: on a machine
without a C compiler (or Python headers) the build prints one line and installs the pure-Python codec,
which weir/records.py uses whenever the native module cannot be imported (or WEIR_PURE_PYTHON=1).
"""

from __future__ import annotations

import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that falls back to the pure-Python codec instead of failing the install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # no compiler at all: distutils' PlatformError and its kin
            self._fallback(error)

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:  # CompileError, LinkError: headers or compiler missing
            self._fallback(error)

    @staticmethod
    def _fallback(error: Exception) -> None:
        print(f"weir: the native record codec was not built ({error}); the pure-Python codec is used", file=sys.stderr)


setup(
    ext_modules=[Extension("weir._records_native", sources=["../weir/_records_native.c"], extra_compile_args=["-O2"])],
    cmdclass={"build_ext": OptionalBuildExt},
)
