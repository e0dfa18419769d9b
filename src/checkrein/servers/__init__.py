"""checkrein.servers"""
