"""labsuite"""
