"""The served OpenAPI document and its offline docs page.

``document.py`` generates the document from the API's routers; ``routes.py`` serves it at
``/openapi.json`` and renders it with Swagger UI at ``/api/docs``, from files Palaver serves.
"""
