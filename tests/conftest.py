import os

# Lessons skip plotly's figure validation for speed; the tests validate every figure drawn.
os.environ["ANATOMY_VALIDATE_FIGURES"] = "1"
