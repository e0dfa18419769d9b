"""`Counters`: every refusal and degradation of the gate, under a stable name."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["Counters"]


@dataclass
class Counters:
    """Every degradation and refusal, counted under a stable name (for `checkrein stats`)."""

    calls: int = 0
    denials: int = 0
    not_found: int = 0
    quarantine_denials: int = 0
    policy_errors: int = 0
    approval_failures: int = 0
    approvals_granted: int = 0
    budget_denials: int = 0
    budget_errors: int = 0
    audit_unavailable_denials: int = 0
    audit_fail_open: int = 0
    audit_errors: int = 0
    inspector_errors: int = 0
    results_withheld: int = 0
    flow_asks: int = 0
    flow_denials: int = 0
    flow_errors: int = 0
    results_truncated: int = 0
    """Results cut to `[policy.results] max_bytes` (every byte counted: images, blobs, metadata)."""
    results_oversize: int = 0
    """Results refused for size (`oversize = "deny"`)."""
    results_too_deep: int = 0
    """Results refused for nesting deeper than `max_depth` (or cyclic)."""
    results_bad_data: int = 0
    """Results refused as malformed: binary data that is not base64, values that are not JSON."""
    upstream_timeouts: int = 0
    upstream_crashes: int = 0
    upstream_errors: int = 0
    retries: int = 0
    internal_errors: int = 0
    cancelled: int = 0
    relayed_notifications: int = 0
    """Progress, log, resource-updated and list_changed notifications relayed to clients."""
    dropped_notifications: int = 0
    """Notifications from upstreams that had no client to go to (unknown request, client gone)."""
    withheld_progress_messages: int = 0
    """Progress notifications whose message was replaced by a note (an injection, or a failed check)."""
    relayed_requests: int = 0
    """Sampling, elicitation and roots requests from upstreams relayed to a client."""
    refused_server_requests: int = 0
    """Sampling, elicitation and roots requests from upstreams that the policy or the client refused."""

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)
