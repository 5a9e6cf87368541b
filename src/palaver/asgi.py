"""ASGI entry point for worker processes and external servers (``uvicorn --factory``)."""

from __future__ import annotations

import os

from starlette.applications import Starlette

from palaver.app import create_app
from palaver.bootstrap import tune_gc_for_serving
from palaver.config import Settings, load_settings
from palaver.serving import configure_protocol


def create_app_from_environment() -> Starlette:
    serialized = os.environ.get("PALAVER_SETTINGS_JSON")
    settings = Settings.model_validate_json(serialized) if serialized else load_settings()
    app = create_app(settings)
    # uvicorn's workers build their protocol from a class; its limits are per process.
    configure_protocol(settings)
    tune_gc_for_serving()
    return app
