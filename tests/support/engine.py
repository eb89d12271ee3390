"""Helpers the engine tests share (moved out of the test modules that defined them)."""
from __future__ import annotations

import textwrap


ADOPTED = textwrap.dedent("""\
    config:
      gpu-platform:cloud: aws
      gpu-platform:cluster:
        name: adopted
        region: us-east-1
        existingKubeconfig:
          secure: v1:AAAAAAAAAAAAAAAA:ciphertext
      gpu-platform:gpuPools:
        - {name: h100-train, instanceType: p5.48xlarge, maxNodes: 2}
      gpu-platform:teams:
        - {name: research, quotas: {h100-train: 8}}
    """)
