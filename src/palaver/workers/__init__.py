"""Background jobs of each server process, started from the app's lifespan (``app.py``)."""
