"""Narrow fragments renamed to an import's new IDs (importers/narrow_links.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from palaver.importers.narrow_links import NewIds, remap_fragment, remap_links

CHANNELS = {"20": 3, "21": 4}
USERS = {"6": 10, "7": 11}
MESSAGES = {"1043": 88}
IDS = NewIds(channel=CHANNELS.get, user=USERS.get, message=MESSAGES.get)


def test_a_channel_and_topic_name_the_new_channel_and_keep_the_slug() -> None:
    assert (
        remap_fragment("narrow/channel/20-Denmark/topic/Castle", IDS)
        == "narrow/channel/3-Denmark/topic/Castle"
    )
    assert remap_fragment("narrow/stream/21-Old-times", IDS) == "narrow/stream/4-Old-times"


def test_people_operands_name_the_new_users() -> None:
    assert remap_fragment("narrow/dm/6,7-group", IDS) == "narrow/dm/10,11-group"
    assert remap_fragment("narrow/sender/7-Zo.C3.AB", IDS) == "narrow/sender/11-Zo.C3.AB"
    assert remap_fragment("narrow/dm-including/6", IDS) == "narrow/dm-including/10"


def test_a_negated_operator_is_renamed_and_stays_negated() -> None:
    assert (
        remap_fragment("narrow/-channel/21-Old-times/is/unread", IDS)
        == "narrow/-channel/4-Old-times/is/unread"
    )


def test_a_message_place_names_the_new_message_or_is_dropped() -> None:
    assert remap_fragment("narrow/channel/20-Denmark/near/1043", IDS) == "narrow/channel/3-Denmark/near/88"
    # Without the message the view still opens its conversation.
    assert remap_fragment("narrow/channel/20-Denmark/with/5", IDS) == "narrow/channel/3-Denmark"
    assert remap_fragment("narrow/id/5", IDS) is None


def test_a_fragment_naming_something_not_imported_is_refused() -> None:
    assert remap_fragment("narrow/channel/99-Gone", IDS) is None
    assert remap_fragment("narrow/dm/6,99-group", IDS) is None


def test_fragments_without_ids_are_left_as_they_are() -> None:
    for fragment in [
        "inbox",
        "recent",
        "narrow/is/starred",
        "narrow/stream/Denmark",
        "narrow/sender/iago@example.com",
    ]:
        assert remap_fragment(fragment, IDS) == fragment
    assert remap_fragment("narrow/is", IDS) == "narrow/is"  # not operator/operand pairs


def test_links_in_a_message_are_renamed_where_they_can_be() -> None:
    text = (
        "See [the castle](#narrow/channel/20-Denmark/topic/Castle) and "
        "https://chat.example.com/#narrow/dm/6,7-group, not #narrow/channel/99-Gone."
    )
    assert remap_links(text, IDS) == (
        "See [the castle](#narrow/channel/3-Denmark/topic/Castle) and "
        "https://chat.example.com/#narrow/dm/10,11-group, not #narrow/channel/99-Gone."
    )
    assert remap_links("no links here", IDS) == "no links here"


def test_the_messages_whose_place_was_left_out_are_told() -> None:
    dropped: list[str] = []
    text = "[one](#narrow/channel/20-Denmark/near/1043) [two](#narrow/channel/20-Denmark/near/5)"
    assert (
        remap_links(text, IDS, dropped)
        == "[one](#narrow/channel/3-Denmark/near/88) [two](#narrow/channel/3-Denmark)"
    )
    assert dropped == ["5"]


# No deadline: on a loaded machine (CI beside other work) one example can pass 200 ms.
@settings(deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["channel", "-channel", "topic", "dm", "sender", "near", "is", "search"]),
            st.from_regex(r"[1-9][0-9]{0,3}(-[A-Za-z.]{0,6})?|[a-z]{1,6}", fullmatch=True),
        ),
        max_size=4,
    )
)
def test_with_ids_unchanged_every_narrow_is_unchanged(pairs: list[tuple[str, str]]) -> None:
    same = NewIds(channel=int, user=int, message=int)
    fragment = "/".join(["narrow", *(f"{op}/{operand}" for op, operand in pairs)])
    assert remap_fragment(fragment, same) == fragment
