"""Palaver: a self-hosted team chat server with a Zulip-compatible API."""

__version__ = "0.1.0"

# The API feature level this server implements (see the interface spec's Versioning section).
FEATURE_LEVEL = 496
# Clients such as zulip-terminal display and compare this, so it leads with the
# API release it is compatible with.
SERVICE_VERSION = f"11.0-palaver-{__version__}"
