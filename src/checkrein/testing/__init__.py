"""checkrein.testing"""
