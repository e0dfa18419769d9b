"""checkrein.upstream"""
