"""checkrein.catalog: tool definitions, namespacing, canonical digests, the pin lock and drift."""

from .lock import LOCK_VERSION, PinnedTool, read_lock, render_lock, write_lock
from .merge import MAX_TOOL_NAME, Catalog, CatalogEntry, SkippedTool, ToolReview, build_catalog
from .model import ToolDefinition, ToolStatus, exposed_name, split_exposed_name
from .namespace import Names, exposed_resource_uri, resource_policy_name, split_resource_uri
from .pin import PinPlan, plan_json, plan_pin, render_plan

__all__ = [
    "LOCK_VERSION",
    "MAX_TOOL_NAME",
    "Catalog",
    "CatalogEntry",
    "Names",
    "PinPlan",
    "PinnedTool",
    "SkippedTool",
    "ToolDefinition",
    "ToolReview",
    "ToolStatus",
    "build_catalog",
    "exposed_name",
    "exposed_resource_uri",
    "plan_json",
    "plan_pin",
    "read_lock",
    "render_lock",
    "render_plan",
    "resource_policy_name",
    "split_exposed_name",
    "split_resource_uri",
    "write_lock",
]
