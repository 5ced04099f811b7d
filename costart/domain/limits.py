"""Every size limit of the domain, in one place (checked on the way in)."""

from __future__ import annotations

from typing import Final

MAX_SPEC_BYTES: Final = 64 * 1024
MAX_NAME_LENGTH: Final = 63
NAME_PATTERN: Final = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
"""Group, member, claim and placement-group names; always matched whole (``fullmatch``):
a ``$`` would also match before a final newline."""
OWNER_PATTERN: Final = r"[A-Za-z0-9][A-Za-z0-9._@-]*"
OUTSIDE_SOURCE_PATTERN: Final = r"[a-z][a-z0-9-]{0,31}"
"""Who counts a node's outside load (`PUT /v1/nodes/{node}/outside-load`, ADR 0118)."""
LABEL_PATTERN: Final = r"[A-Za-z0-9]([A-Za-z0-9._/-]{0,251}[A-Za-z0-9])?"
# An environment variable's name, as a run table may set it and an agent may allow it.
ENV_NAME_PATTERN: Final = r"[A-Za-z_][A-Za-z0-9_]{0,127}"
"""Node names, topology domain names, label keys and values, GPU types (matched whole)."""
MAX_OWNER_LENGTH: Final = 63
MAX_LABELS_PER_GROUP: Final = 32
MAX_PROFILE_LENGTH: Final = 253
MAX_MEMBERS_PER_GROUP: Final = 64
MAX_TASKS_PER_MEMBER: Final = 4096
MAX_REPLICAS_PER_MEMBER: Final = 4096
MAX_CLAIMS_PER_MEMBER: Final = 32
MAX_FAILURE_RULES: Final = 32
MAX_RESTARTS: Final = 1000
MAX_GROUP_RESTARTS: Final = 1000
MAX_ATTEMPTS: Final = 1000
MAX_PRIORITY: Final = 1_000_000
MAX_GPU_PER_TASK: Final = 64
MAX_CPU_PER_TASK: Final = 4096
MAX_MEM_GB_PER_TASK: Final = 65536
MAX_DURATION_NS: Final = 30 * 24 * 3600 * 10**9  # 30 days
MAX_REASON_TEXT: Final = 512
MAX_ACTOR_NAME: Final = 128
MAX_REPORT_KEY: Final = 128
MAX_HOST_TASKS: Final = 1_000_000
