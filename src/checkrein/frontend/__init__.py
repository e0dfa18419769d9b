"""checkrein.frontend"""
