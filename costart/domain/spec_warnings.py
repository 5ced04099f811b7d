"""What a valid spec may still get wrong: plain ``env`` values that look like secrets.

``run.env`` is stored in the log for ever and shown to the group's owner and admins
(ADR 0064, 0065): an API key there cannot be taken back. A name shaped like a
credential (``*_TOKEN``, ``*_KEY``, ``*PASSWORD*``, ``*_SECRET``, ...) with a value is
warned about, naming the field and the way out (``env_secrets``). A warning never
refuses the spec: ``SSH_KEY_PATH=/etc/...`` or ``MONKEY=1`` are someone's real intent.
"""

from __future__ import annotations

import re
from typing import Final

from costart.domain.spec_types import GroupSpec

# Whole-name match, case-insensitive: a credential word at the end or alone.
SECRET_SHAPED: Final = re.compile(
    r"(?:.*_)?(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|API_?KEY|AUTH)",
    re.IGNORECASE,
)


def spec_warnings(spec: GroupSpec) -> list[str]:
    """One line per plain ``env`` value whose name looks like a secret, naming its field."""
    found = []
    for index, member in enumerate(spec.members):
        run = member.run
        if run is None:
            continue
        for name, value in run.env:
            if value and SECRET_SHAPED.fullmatch(name):
                found.append(
                    f"members[{index}].run.env.{name}: looks like a secret; plain env values "
                    "are stored in the log for ever: name it in env_secrets instead "
                    "(its value then stays on the node)"
                )
    return found
