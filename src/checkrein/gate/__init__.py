"""checkrein.gate"""
