"""grading package."""
