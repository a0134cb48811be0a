"""study_protocols package."""
