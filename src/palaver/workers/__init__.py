"""Background workers each server process runs beside its requests (started by ``create_app``)."""
