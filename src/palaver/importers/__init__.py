"""Moving in from another chat system: ``palaver import-from SOURCE PATH``.

Each source module (``slack``, ``zulip``) reads its export as the source tool writes it
and yields the source-independent representation of ``model``: users, channels, custom
emoji and files as small lists, messages as a stream in time order. ``writer`` creates
one organization from it in a single transaction, so a failure leaves nothing behind.
``bundle`` opens a zip, tarball or directory alike; ``fetch`` downloads the files an
export only links to.
"""
