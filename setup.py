from setuptools import setup

setup(cffi_modules=["pyrt/_build.py:ffibuilder"])
