"""Every table is exported or excluded on purpose; every ID column is known; text remaps."""

from __future__ import annotations

from palaver.models import Base
from palaver.portability import schema
from palaver.portability.remap import IdMap, transform_row
from palaver.portability.schema import EXCLUDED, exported_plans, realm_condition, undeclared_id_columns


def test_every_table_is_exported_or_excluded() -> None:
    exported = {p.name for p in exported_plans()}
    assert exported | set(EXCLUDED) == set(Base.metadata.tables)
    assert not exported & set(EXCLUDED)
    for name in exported:  # each one knows which of its rows belong to a realm
        realm_condition(name, 1)


def test_every_integer_id_column_is_declared() -> None:
    # A new integer column named like an ID must be a foreign key, a SOFT_REFERENCE or
    # listed in NOT_REFERENCES, or an import would keep the old ID in it.
    assert undeclared_id_columns() == []


def test_parents_come_before_children() -> None:
    order = [p.name for p in exported_plans()]
    for plan in exported_plans():
        for column, target in plan.references.items():
            if (plan.name, column) in schema.SOFT_REFERENCES or target == plan.name:
                continue
            assert order.index(target) < order.index(plan.name), (plan.name, column)


IDS = IdMap(
    {"user_profile": 100, "stream": 1000, "user_group": 10, "message": 5000, "realm": 2, "realm_emoji": 7}
)


def test_text_rewrites() -> None:
    html = (
        '<span class="user-mention" data-user-id="3">@Ann</span>'
        '<span class="user-group-mention" data-user-group-id="4">@g</span>'
        '<a class="stream" data-stream-id="5" href="/#narrow/channel/5-general">#general</a>'
        '<a href="/#narrow/channel/5-general/topic/t/near/42">t</a>'
        '<a href="/#narrow/dm/3,8-group">dm</a>'
        '<a href="/user_uploads/1/ab/xyz/f.txt">f</a>'
        '<img src="/user_avatars/1/emoji/images/9.png">'
    )
    assert IDS.text(html) == (
        '<span class="user-mention" data-user-id="103">@Ann</span>'
        '<span class="user-group-mention" data-user-group-id="14">@g</span>'
        '<a class="stream" data-stream-id="1005" href="/#narrow/channel/1005-general">#general</a>'
        '<a href="/#narrow/channel/1005-general/topic/t/near/5042">t</a>'
        '<a href="/#narrow/dm/103,108-group">dm</a>'
        '<a href="/user_uploads/3/ab/xyz/f.txt">f</a>'
        '<img src="/user_avatars/3/emoji/images/16.png">'
    )
    markdown = "@**Ann|3** and @_**Bob|8** see #**general>t@42** and [f](/user_uploads/1/a/b/f.txt), not |3**"
    assert IDS.text(markdown) == (
        "@**Ann|103** and @_**Bob|108** see #**general>t@5042** and [f](/user_uploads/3/a/b/f.txt), not |3**"
    )


def test_row_rewrites() -> None:
    plans = {p.name: p for p in exported_plans()}
    history = '[{"user_id": 3, "timestamp": 1, "prev_stream": 5, "stream": 6, "prev_content": "@**A|3**"}]'
    message = {
        "id": 40,
        "realm_id": 1,
        "sender_id": 3,
        "recipient_id": 9,
        "content": "",
        "rendered_content": None,
        "edit_history": history,
    }
    ids = IdMap({**IDS.deltas, "recipient": 20})
    out = transform_row(plans["message"], message, ids)
    assert (out["id"], out["realm_id"], out["sender_id"], out["recipient_id"]) == (5040, 3, 103, 29)
    assert out["edit_history"] == (
        '[{"user_id":103,"timestamp":1,"prev_stream":1005,"stream":1006,"prev_content":"@**A|103**"}]'
    )
    recipient = transform_row(plans["recipient"], {"id": 1, "type": 2, "type_id": 5}, ids)
    assert recipient == {"id": 21, "type": 2, "type_id": 1005}
    draft = transform_row(
        plans["draft"], {"id": 1, "user_profile_id": 3, "type": "private", "to": "[3,8]"}, ids
    )
    assert draft["to"] == "[103,108]"
    realm = transform_row(
        plans["realm"], {"id": 1, "can_create_groups": 4, "signup_announcements_stream_id": 5}, ids
    )
    assert realm == {"id": 3, "can_create_groups": 14, "signup_announcements_stream_id": 1005}


def test_progress_line() -> None:
    import io

    from palaver.portability.archive import Progress

    out = io.StringIO()
    bar = Progress("export", 10, out)
    bar.advance(4, "message")
    bar.finish()
    text = out.getvalue()
    assert text.startswith("\rexport [") and text.endswith("\n")
    assert " 4/10 rows " in text and "message" in text
    silent = Progress("import", 10, None)  # off a terminal: nothing drawn
    silent.advance(10, "message")
    silent.finish()
