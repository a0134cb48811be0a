"""The task suite as a whole: construction checks (appendix B.5) and composition against the
paper's Figure 3.
"""
