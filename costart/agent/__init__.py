"""`costart agent`: the reference node agent (docs/design.md §9, ADR 0042). It runs each task of
its nodes as a local process from the member's run table, probes claims, starts
nothing before ``may_start``, reports starts and exits, relaunches on restart-member,
tears down on fail-group, restart-group, cancel and group success, and reconciles
after its own restart."""

from costart.agent.accounts import Account, AccountRefused, Accounts, AccountsError
from costart.agent.agent import Agent, AgentConfig
from costart.agent.credentials import TokenRefused, agent_token
from costart.agent.model import Exit, NodeTask, Refused, TaskKey
from costart.agent.probe_selection import MembersPerPass, ProbeKey, claim_report, wanted_probes
from costart.agent.probe_targets import parse_allow_rules
from costart.agent.reconcile import ReconcilePlan, plan
from costart.agent.secrets import Secrets, SecretsError
from costart.agent.state_dir import StateDirRefused, default_state_dir, prepare_state_dir

__all__ = [
    "Account",
    "AccountRefused",
    "Accounts",
    "AccountsError",
    "Agent",
    "AgentConfig",
    "Exit",
    "MembersPerPass",
    "NodeTask",
    "ProbeKey",
    "ReconcilePlan",
    "Refused",
    "Secrets",
    "SecretsError",
    "StateDirRefused",
    "TaskKey",
    "TokenRefused",
    "agent_token",
    "claim_report",
    "default_state_dir",
    "parse_allow_rules",
    "plan",
    "prepare_state_dir",
    "wanted_probes",
]
