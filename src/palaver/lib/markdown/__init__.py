"""Zulip-flavoured Markdown, rendered to sanitized HTML.

Built on markdown-it-py's CommonMark parser with rules of our own for what Zulip adds:
mentions, channel links, emoji, math, spoiler and quote blocks, bare URLs and linkifiers.
The HTML matches what Zulip produces, since clients style and parse it (mentions by
``data-user-id``, spoilers by their classes). Whatever the rules emit then passes through
nh3 with an allow-list of exactly those tags, attributes and classes, so a bug in a rule
cannot become an injection.

``render_message`` renders message content for a realm (``MarkdownContext`` says who and
what can be mentioned); ``render_markdown`` renders descriptions and profile fields, where
emoji work but nothing is mentioned.

One module per concern: ``render`` (the entry points), ``contract``, ``syntax``, ``urls``, ``state``,
``inline``, ``blocks``, ``links``, ``renderer``, ``parser``, ``sanitize``.
"""
