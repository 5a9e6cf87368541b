"""State providers for POST /register, one module per resource (see ``palaver.lib.register``).

Every module here is imported when the first queue registers, which registers its
``@state_provider`` functions.
"""
