"""Benchmarks (separate from tests): ``python -m benchmarks.run`` writes reports/benchmarks.*"""
