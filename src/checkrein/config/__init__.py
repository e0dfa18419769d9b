"""checkrein's configuration: one TOML file validated once into one `Config`."""

from .audit import AuditSettings
from .fleet import PostgresAuditSettings, StateSettings, TelemetrySettings
from .gateway import GatewaySettings, IdentityConfig, ServerConfig
from .model import CREDENTIALS, LAUNCH, WEBHOOK, Config, config_from_mapping, load_config, parse_config
from .policy import (
    ApprovalSettings,
    ArgConstraint,
    BudgetLimit,
    BudgetSettings,
    PolicySettings,
    ResultSettings,
    ToolRule,
)

__all__ = [
    "CREDENTIALS",
    "LAUNCH",
    "WEBHOOK",
    "ApprovalSettings",
    "ArgConstraint",
    "AuditSettings",
    "BudgetLimit",
    "BudgetSettings",
    "Config",
    "GatewaySettings",
    "IdentityConfig",
    "PolicySettings",
    "PostgresAuditSettings",
    "ResultSettings",
    "ServerConfig",
    "StateSettings",
    "TelemetrySettings",
    "ToolRule",
    "config_from_mapping",
    "load_config",
    "parse_config",
]
