"""Background workers that run inside each server process, off the request threads."""
