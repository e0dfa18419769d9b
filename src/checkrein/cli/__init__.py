"""checkrein.cli"""
