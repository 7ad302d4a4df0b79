"""Command-line interface; see ``spatialact --help``."""
