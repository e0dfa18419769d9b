"""checkrein.audit"""
