"""checkrein.agent"""
