"""checkrein.testing: public test doubles.

``echo_server`` (a small MCP server on every transport), ``conformance_server`` (the MCP
conformance suite's fixture names and behaviours), ``memory_upstream`` (an in-memory `Upstream`),
``faulty_file`` (a file that fails on cue).
"""
