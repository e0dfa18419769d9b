"""checkrein.catalog"""
