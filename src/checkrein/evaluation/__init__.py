"""checkrein.evaluation"""
