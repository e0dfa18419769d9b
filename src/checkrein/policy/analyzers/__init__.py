"""checkrein.policy.analyzers"""
