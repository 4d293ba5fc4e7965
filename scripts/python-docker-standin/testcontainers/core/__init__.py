"""A stand-in for testcontainers that starts pulsarsim instead of Docker.

scripts/python-failover puts this folder first on PYTHONPATH; see
testcontainers.core.container.
"""
