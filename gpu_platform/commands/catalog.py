"""`gpu-platform catalog [--cloud C]`: the GPU instance types the platform knows."""
from __future__ import annotations

from components import catalog


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("catalog", help="print the GPU catalog")
    parser.add_argument("--cloud", choices=catalog.CLOUDS, help="only this cloud")


def run(args) -> int:
    print(catalog.format_table(args.cloud))
    return 0
