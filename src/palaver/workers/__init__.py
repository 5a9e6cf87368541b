"""Background workers started from the app's lifespan."""
