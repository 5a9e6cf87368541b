"""Cost of rendering one message, in microseconds, for a few typical messages.

Run: .venv/bin/python bench/markdown_cost.py [--repeat N]

Rendering happens inside the send transaction, so its cost is part of send latency and
of how long SQLite's write lock is held. The context is built once, as the message layer
builds it once per message from database rows; only rendering is timed.
"""

from __future__ import annotations

import argparse
import statistics
import time

from palaver.lib.markdown.contract import GroupRef, LinkifierRef, MarkdownContext, StreamRef, UserRef
from palaver.lib.markdown.render import render_message

USERS = [UserRef(i, name) for i, name in enumerate(["Iago", "King Hamlet", "Othello", "Cordelia"], 1)]
CONTEXT = MarkdownContext(
    realm_url="https://chat.example.com",
    sender_id=1,
    sender_full_name="Iago",
    users_by_name={u.full_name.lower(): u for u in USERS},
    users_by_id={u.id: u for u in USERS},
    groups_by_name={"support": GroupRef(10, "support")},
    streams_by_name={"verona": StreamRef(5, "Verona")},
    linkifiers=(LinkifierRef(r"#(?P<id>[0-9]+)", "https://github.com/example/project/issues/{id}"),),
)

MESSAGES = {
    "plain short": "Sounds good, see you at the meeting tomorrow.",
    "mention + emoji": "@**King Hamlet** can you review this? :+1: thanks! :tada:",
    "link + linkifier": (
        "Fixed in #1234, details at https://example.com/docs/page_one?x=1 and #**Verona>deploys**."
    ),
    "unicode emoji": "Great work everyone 🎉🎉 really happy with this ❤️",
    "code block": (
        "Here's the fix:\n```python\ndef handler(request):\n    return {'ok': True}\n```\n"
        "Let me know @*support*"
    ),
    "long formatted": (
        "# Release notes\n\n"
        + "\n".join(f"- item **{i}** with `code` and a [link](https://example.com/{i})" for i in range(15))
        + "\n\n> quoted reply from @**Othello**\n\n"
        + "| a | b |\n|---|---|\n| 1 | 2 |\n\n```spoiler Details\nhidden $$x^2$$\n```"
    ),
}


def measure(content: str, repeat: int) -> tuple[float, float]:
    """(best, median) µs per render over ``repeat`` batches of 20.

    The best batch is the cost on an idle CPU; the median shows what a busy machine adds.
    """
    render_message(content, CONTEXT)  # warm caches (parser, emoji table, sanitizer)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(20):
            render_message(content, CONTEXT)
        samples.append((time.perf_counter() - start) / 20 * 1e6)
    return min(samples), statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    results = {name: measure(content, args.repeat) for name, content in MESSAGES.items()}
    width = max(len(name) for name in results)
    print(f"{'message':<{width}}  {'best µs':>8}  {'median µs':>9}  chars")
    for name, (best, median) in results.items():
        print(f"{name:<{width}}  {best:8.1f}  {median:9.1f}  {len(MESSAGES[name])}")


if __name__ == "__main__":
    main()
