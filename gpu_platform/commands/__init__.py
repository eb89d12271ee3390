"""Subcommands of the gpu-platform CLI."""
