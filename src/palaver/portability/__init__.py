"""Moving an organization between servers: export to one archive, import from it.

``schema`` derives, from ``Base.metadata``, which rows of each table belong to a realm
and which columns hold IDs of which table; ``remap`` turns old IDs into new ones (also
inside message content and JSON text); ``exporter`` and ``importer`` stream the rows
through a zip archive in batches, so memory stays bounded however many messages there are.
"""

FORMAT_VERSION = 1
