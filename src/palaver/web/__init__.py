"""The browser side of Palaver: sign-in pages, cookie sessions for /json, static assets.

Kept import-light: ``api/pipeline.py`` imports ``web.sessions``, so this package must not
import the pages (which import the API pipeline) at package level.
"""
