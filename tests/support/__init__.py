"""Helpers the test modules share: paths, real parts, fixtures data and per-area helpers."""
