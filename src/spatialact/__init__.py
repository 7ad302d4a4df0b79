"""spatialact: a simulator and action scorer for the agentic competence of multimodal LLMs.

The light core (``geometry``, ``action_space``, ``tasks``, ``scorers``) needs only numpy, scipy and jsonschema;
simulators, torch and HTTP clients are imported where they are used.
"""

__version__ = "0.1.0"
