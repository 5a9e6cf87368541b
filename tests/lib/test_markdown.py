"""Zulip-flavoured Markdown: each feature's HTML, what a render reports, and sanitizing."""

from __future__ import annotations

import time
from html import escape

import pytest

from palaver.lib.markdown.contract import (
    GroupRef,
    LinkifierRef,
    MarkdownContext,
    RenderResult,
    StreamRef,
    UserRef,
)
from palaver.lib.markdown.render import render_markdown, render_message
from palaver.lib.markdown.sanitize import sanitize
from palaver.lib.markdown.syntax import (
    possible_channel_names,
    possible_group_names,
    possible_mention_ids,
    possible_mention_names,
)
from palaver.lib.markdown.urls import expand_url_template, topic_links

HAMLET = UserRef(10, "King Hamlet")
IAGO = UserRef(11, "Iago")
SNEAKY = UserRef(12, 'Bob <img src=x onerror="alert(1)">')
SUPPORT = GroupRef(20, "support")
VERONA = StreamRef(30, "Verona")
DENMARK = StreamRef(31, "Denmark news")
ISSUES = LinkifierRef(r"#(?P<id>[0-9]+)", "https://github.com/zulip/zulip/issues/{id}")

LINK_ATTRS = 'target="_blank" rel="noopener noreferrer"'


def context(linkifiers: tuple[LinkifierRef, ...] = (ISSUES,)) -> MarkdownContext:
    users = [HAMLET, IAGO, SNEAKY]
    return MarkdownContext(
        realm_url="https://zulip.example.com",
        sender_id=IAGO.id,
        sender_full_name=IAGO.full_name,
        users_by_name={u.full_name.lower(): u for u in users},
        users_by_id={u.id: u for u in users},
        groups_by_name={SUPPORT.name: SUPPORT},
        streams_by_name={s.name.lower(): s for s in (VERONA, DENMARK)},
        linkifiers=linkifiers,
    )


def render(content: str, **kw: tuple[LinkifierRef, ...]) -> RenderResult:
    return render_message(content, context(**kw))


def html(content: str) -> str:
    return render(content).html


# -- CommonMark basics -------------------------------------------------------------------


def test_paragraphs_and_line_breaks() -> None:
    assert html("one\ntwo\n\nthree") == "<p>one<br>\ntwo</p>\n<p>three</p>"


def test_emphasis_strong_and_strikethrough() -> None:
    assert html("*a* **b** ~~c~~") == "<p><em>a</em> <strong>b</strong> <del>c</del></p>"


def test_links_open_in_a_new_tab() -> None:
    result = render("[docs](https://example.com/a)")
    assert result.html == f'<p><a href="https://example.com/a" {LINK_ATTRS}>docs</a></p>'
    assert result.has_link
    assert result.links == ("https://example.com/a",)


def test_bare_urls_are_linked_whole_and_without_trailing_punctuation() -> None:
    result = render("see https://example.com/a_b_c_d*x*, and (http://example.org/wiki/A_(b)).")
    assert result.html == (
        f'<p>see <a href="https://example.com/a_b_c_d*x" {LINK_ATTRS}>https://example.com/a_b_c_d*x</a>*, '
        f'and (<a href="http://example.org/wiki/A_(b)" {LINK_ATTRS}>http://example.org/wiki/A_(b)</a>).</p>'
    )
    assert result.links == ("https://example.com/a_b_c_d*x", "http://example.org/wiki/A_(b)")


def test_text_without_links_has_none() -> None:
    result = render("just text: nothing here http:// or example.com")
    assert not result.has_link and result.links == ()
    assert "<a" not in result.html


def test_inline_code_keeps_its_content_literal() -> None:
    assert html("`@**King Hamlet** :smile: <b> #**Verona**`") == (
        "<p><code>@**King Hamlet** :smile: &lt;b&gt; #**Verona**</code></p>"
    )


def test_fenced_code_block_with_language_is_highlighted_by_pygments() -> None:
    assert html('```python\nprint("hi")\n```') == (
        '<div class="codehilite" data-code-language="Python"><pre><span></span>'
        '<code><span class="nb">print</span><span class="p">(</span><span class="s2">"hi"</span>'
        '<span class="p">)</span>\n</code></pre></div>'
    )
    # An alias finds the lexer; the text stays escaped.
    assert html("```js\nif (a < b) {}\n```").startswith(
        '<div class="codehilite" data-code-language="JavaScript"><pre><span></span><code>'
        '<span class="k">if</span>'
    )
    assert "&lt;" in html("```js\nif (a < b) {}\n```")


def test_fenced_code_block_in_an_unknown_language_is_plain() -> None:
    assert html("```nosuchlanguage\n<x>\n```") == (
        '<div class="codehilite" data-code-language="nosuchlanguage"><pre><span></span>'
        "<code>&lt;x&gt;\n</code></pre></div>"
    )


def test_code_blocks_without_language_and_indented() -> None:
    expected = '<div class="codehilite"><pre><span></span><code>x = 1\n</code></pre></div>'
    assert html("```\nx = 1\n```") == expected
    assert html("~~~\nx = 1\n~~~") == expected
    assert html("    x = 1") == expected


def test_code_blocks_do_not_render_mentions_emoji_or_links() -> None:
    result = render("```\n@**King Hamlet** @*support* @**all** :smile: 😄 https://x.com #**Verona** #12\n```")
    assert "span" not in result.html.replace("<span></span>", "")
    assert "<a" not in result.html
    assert result.mentioned_user_ids == frozenset() and not result.stream_wildcard
    assert not result.has_link


def test_block_quotes() -> None:
    assert html("> quoted\n\nafter") == "<blockquote>\n<p>quoted</p>\n</blockquote>\n<p>after</p>"


def test_quote_blocks_hold_markdown_and_nested_code() -> None:
    assert html("```quote\n**bold**\n```python\nx\n```\nmore\n```\nafter") == (
        "<blockquote>\n<p><strong>bold</strong></p>\n"
        '<div class="codehilite" data-code-language="Python"><pre><span></span><code>'
        '<span class="n">x</span>\n</code></pre></div>\n<p>more</p>\n</blockquote>\n<p>after</p>'
    )


def test_unclosed_quote_block_runs_to_the_end() -> None:
    assert html("```quote\nstill quoted") == "<blockquote>\n<p>still quoted</p>\n</blockquote>"


def test_lists() -> None:
    assert html("- a\n- b") == "<ul>\n<li>a</li>\n<li>b</li>\n</ul>"
    assert html("3. a\n4. b") == '<ol start="3">\n<li>a</li>\n<li>b</li>\n</ol>'


def test_tables() -> None:
    assert html("| a | b | c |\n|:--|--:|:-:|\n| 1 | 2 | 3 |") == (
        "<table>\n<thead>\n<tr>\n"
        '<th class="text-align-left">a</th>\n<th class="text-align-right">b</th>\n'
        '<th class="text-align-center">c</th>\n'
        "</tr>\n</thead>\n<tbody>\n<tr>\n"
        '<td class="text-align-left">1</td>\n<td class="text-align-right">2</td>\n'
        '<td class="text-align-center">3</td>\n'
        "</tr>\n</tbody>\n</table>"
    )


# -- Zulip blocks ------------------------------------------------------------------------


def test_spoiler_with_header() -> None:
    result = render("```spoiler The *ending*\nIt was @**Iago**.\n```")
    assert result.html == (
        '<div class="spoiler-block"><div class="spoiler-header">\n<p>The <em>ending</em></p>\n'
        '</div><div class="spoiler-content" aria-hidden="true">\n'
        '<p>It was <span class="user-mention" data-user-id="11">@Iago</span>.</p>\n</div></div>'
    )
    assert result.mentioned_user_ids == {IAGO.id}


def test_spoiler_without_header() -> None:
    assert html("```spoiler\nhidden\n```") == (
        '<div class="spoiler-block"><div class="spoiler-header">\n'
        '</div><div class="spoiler-content" aria-hidden="true">\n<p>hidden</p>\n</div></div>'
    )


MATH = (
    '<math xmlns="http://www.w3.org/1998/Math/MathML" display="{}"><semantics>{}'
    '<annotation encoding="application/x-tex">{}</annotation></semantics></math>'
)


def test_inline_math_is_mathml_with_the_tex() -> None:
    mathml = MATH.format(
        "inline",
        "<mrow><mi>π</mi><msup><mi>r</mi><mn>2</mn></msup><mo>&lt;</mo><mn>4</mn></mrow>",
        "\\pi r^2 &lt; 4",
    )
    assert html("area $$\\pi r^2 < 4$$ ok") == f'<p>area <span class="katex">{mathml}</span> ok</p>'
    assert html("costs $5 and $$ alone") == "<p>costs $5 and $$ alone</p>"


def test_math_block() -> None:
    mathml = MATH.format(
        "block",
        "<mrow><mfrac><mrow><mn>1</mn></mrow><mrow><mn>2</mn></mrow></mfrac><mo>&lt;</mo><mi>b</mi><mo>&gt;</mo></mrow>",
        "\\frac{1}{2} &lt;b&gt;",
    )
    assert html("```math\n\\frac{1}{2} <b>\n```") == (
        f'<p><span class="katex-display"><span class="katex">{mathml}</span></span></p>'
    )


@pytest.mark.parametrize("tex", ["x^", "\\frac{1}", "\\notacommand x", "\\begin{matrix} a", "}{", "{" * 5000])
def test_invalid_tex_is_an_error_span(tex: str) -> None:
    assert (
        html(f"see $${tex}$$") == f'<p>see <span class="tex-error">$${escape(tex, quote=False)}$$</span></p>'
    )


def test_math_cannot_smuggle_links_or_styles() -> None:
    out = html("$$\\href{javascript:alert(1)}{x} \\style{color:red}{y} \\class{evil}{z}$$")
    assert "javascript" not in out.split("<annotation")[0]
    for bad in ("href=", "style=", 'class="evil"'):
        assert bad not in out
    assert "<mi>x</mi>" in out


def test_math_keeps_layout_attributes() -> None:
    out = html("$$\\color{red}{x} \\boxed{y} \\sqrt[3]{z} \\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}$$")
    for kept in ('mathcolor="red"', 'notation="box"', "<mroot>", "<mtable>", "<mtd><mi>d</mi></mtd>"):
        assert kept in out


# -- mentions ----------------------------------------------------------------------------


def test_user_mention_by_name_any_case() -> None:
    result = render("hi @**king hamlet**")
    assert result.html == '<p>hi <span class="user-mention" data-user-id="10">@King Hamlet</span></p>'
    assert result.mentioned_user_ids == {HAMLET.id}


def test_user_mention_with_id() -> None:
    result = render("@**King Hamlet|10** @**|11**")
    assert result.html == (
        '<p><span class="user-mention" data-user-id="10">@King Hamlet</span> '
        '<span class="user-mention" data-user-id="11">@Iago</span></p>'
    )
    assert result.mentioned_user_ids == {HAMLET.id, IAGO.id}


def test_user_mention_whose_name_contradicts_its_id_is_no_mention() -> None:
    result = render("@**Iago|10**")
    assert "user-mention" not in result.html
    assert result.mentioned_user_ids == frozenset()


def test_silent_user_mention_notifies_nobody() -> None:
    result = render("@_**King Hamlet**")
    assert result.html == '<p><span class="user-mention silent" data-user-id="10">King Hamlet</span></p>'
    assert result.mentioned_user_ids == frozenset()


def test_unknown_mentions_render_as_plain_markdown() -> None:
    result = render("@**Nobody** @*nogroup* #**Nowhere** @**King Hamlet|99**")
    assert result.html == (
        "<p>@<strong>Nobody</strong> @<em>nogroup</em> #<strong>Nowhere</strong> "
        "@<strong>King Hamlet|99</strong></p>"
    )
    assert result.mentioned_user_ids == frozenset() and result.mentioned_group_ids == frozenset()


def test_mentions_need_a_word_boundary() -> None:
    result = render("email@**King Hamlet** but (@**King Hamlet**)")
    assert result.html.count("user-mention") == 1


def test_mentioned_names_are_escaped() -> None:
    result = render(f"@**{SNEAKY.full_name}**")
    assert result.html == (
        '<p><span class="user-mention" data-user-id="12">@Bob &lt;img src=x onerror="alert(1)"&gt;</span></p>'
    )


def test_group_mentions() -> None:
    result = render("@*support* and @_*Support*")
    assert result.html == (
        '<p><span class="user-group-mention" data-user-group-id="20">@support</span> and '
        '<span class="user-group-mention silent" data-user-group-id="20">support</span></p>'
    )
    assert result.mentioned_group_ids == {SUPPORT.id}
    assert render("@_*support*").mentioned_group_ids == frozenset()


@pytest.mark.parametrize("wildcard", ["all", "everyone", "channel", "stream"])
def test_stream_wildcards(wildcard: str) -> None:
    result = render(f"@**{wildcard}** look")
    assert result.html == (
        f'<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@{wildcard}</span> look</p>'
    )
    assert result.stream_wildcard and not result.topic_wildcard
    assert result.mentioned_user_ids == frozenset()


def test_topic_wildcard() -> None:
    result = render("@**topic**")
    assert result.html == '<p><span class="topic-mention">@topic</span></p>'
    assert result.topic_wildcard and not result.stream_wildcard


def test_silent_wildcards_set_no_flags() -> None:
    result = render("@_**all** @_**topic**")
    assert result.html == (
        '<p><span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span> '
        '<span class="topic-mention silent">topic</span></p>'
    )
    assert not result.stream_wildcard and not result.topic_wildcard


# -- channel links ---------------------------------------------------------------------------


def test_channel_link() -> None:
    result = render("#**verona**")
    assert result.html == (
        '<p><a class="stream" data-stream-id="30" href="/#narrow/channel/30-Verona" '
        'rel="noopener noreferrer">#Verona</a></p>'
    )
    assert not result.has_link  # links to channels are navigation, not links


def test_topic_link_encodes_like_zulip() -> None:
    assert html("#**Denmark news>my topic.x**") == (
        '<p><a class="stream-topic" data-stream-id="31" '
        'href="/#narrow/channel/31-Denmark-news/topic/my.20topic.2Ex" rel="noopener noreferrer">'
        "#Denmark news&gt;my topic.x</a></p>"
    )


def test_message_link() -> None:
    assert html("#**Verona>lunch@42**") == (
        '<p><a class="message-link" href="/#narrow/channel/30-Verona/topic/lunch/near/42" '
        'rel="noopener noreferrer">#Verona&gt;lunch @ \U0001f4ac</a></p>'
    )


def test_links_to_the_empty_topic_show_its_display_name() -> None:
    assert html("#**Verona>** #**Verona>@7**") == (
        '<p><a class="stream-topic" data-stream-id="30" href="/#narrow/channel/30-Verona/topic/" '
        'rel="noopener noreferrer">#Verona&gt;<em>general chat</em></a> '
        '<a class="message-link" href="/#narrow/channel/30-Verona/topic//near/7" '
        'rel="noopener noreferrer">#Verona&gt;<em>general chat</em>@ \U0001f4ac</a></p>'
    )


# -- emoji ---------------------------------------------------------------------------------


def test_emoji_shortcodes() -> None:
    assert html(":smile: :+1:") == (
        '<p><span aria-label="smile" class="emoji emoji-1f604" role="img" title="smile">:smile:</span> '
        '<span aria-label="+1" class="emoji emoji-1f44d" role="img" title="+1">:+1:</span></p>'
    )


def test_emoji_labels_read_as_words() -> None:
    assert html(":thumbs_up:") == (
        '<p><span aria-label="thumbs up" class="emoji emoji-1f44d" role="img" title="thumbs up">'
        ":thumbs_up:</span></p>"
    )


def test_zulip_extra_emoji() -> None:
    assert html(":zulip:") == (
        '<p><img alt=":zulip:" class="emoji" src="/static/generated/emoji/images/emoji/unicode/zulip.png" '
        'title="zulip"></p>'
    )


def test_unknown_or_embedded_shortcodes_stay_text() -> None:
    assert html(":nosuchemoji: a:smile: 12:30:45") == "<p>:nosuchemoji: a:smile: 12:30:45</p>"


def test_unicode_emoji_become_emoji_spans() -> None:
    assert html("yay 🎉") == (
        '<p>yay <span aria-label="tada" class="emoji emoji-1f389" role="img" title="tada">:tada:</span></p>'
    )


# -- /me, linkifiers, uploads ----------------------------------------------------------------


def test_me_messages() -> None:
    result = render("/me is away")
    assert result.is_me_message
    assert result.html == "<p>/me is away</p>"
    assert not render("/meh").is_me_message
    assert not render("hi /me there").is_me_message


def test_linkifiers() -> None:
    result = render("fixes #123, not x#45 or #67abc")
    assert result.html == (
        f'<p>fixes <a href="https://github.com/zulip/zulip/issues/123" {LINK_ATTRS}>#123</a>, '
        "not x#45 or #67abc</p>"
    )
    assert result.links == ("https://github.com/zulip/zulip/issues/123",)


def test_linkifiers_skip_link_text_and_code() -> None:
    assert html("[see #123](https://a.example) `#123`") == (
        f'<p><a href="https://a.example" {LINK_ATTRS}>see #123</a> <code>#123</code></p>'
    )


def test_linkifier_with_several_groups_and_first_one_wins() -> None:
    linkifiers = (
        LinkifierRef(r"(?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<id>\d+)", "https://gh.example/{org}/{repo}/{id}"),
        ISSUES,
    )
    assert render("zulip/web#5", linkifiers=linkifiers).html == (
        f'<p><a href="https://gh.example/zulip/web/5" {LINK_ATTRS}>zulip/web#5</a></p>'
    )


def test_invalid_linkifier_pattern_links_nothing() -> None:
    assert render("#12 (unclosed", linkifiers=(LinkifierRef("(unclosed", "https://x/{a}"),)).html == (
        "<p>#12 (unclosed</p>"
    )


def test_url_template_expansion() -> None:
    values = {"id": "a b/c", "q": "x&y", "empty": ""}
    assert expand_url_template("https://x/{id}", values) == "https://x/a%20b%2Fc"
    assert expand_url_template("https://x/{+id}", values) == "https://x/a%20b/c"
    assert expand_url_template("https://x{/id}{?q,empty,missing}", values) == (
        "https://x/a%20b%2Fc?q=x%26y&empty="
    )
    assert expand_url_template("https://x/{missing}", values) == "https://x/"


def test_uploads_make_attachments_and_image_previews() -> None:
    result = render("[report.pdf](/user_uploads/2/ab/report.pdf) [cat](/user_uploads/2/cd/cat.png)")
    assert result.has_attachment and result.has_image and result.has_link
    assert result.html.endswith(
        '<div class="message_inline_image"><a href="/user_uploads/2/cd/cat.png" title="cat.png" '
        'rel="noopener noreferrer"><img src="/user_uploads/2/cd/cat.png"></a></div>'
    )
    elsewhere = render("https://elsewhere.example/user_uploads/2/ab/x.png")
    assert not elsewhere.has_attachment and not elsewhere.has_image


def test_markdown_images_of_other_sites_become_links() -> None:
    result = render("![a cat](https://example.com/cat.png)")
    assert result.html == f'<p><a href="https://example.com/cat.png" {LINK_ATTRS}>a cat</a></p>'
    assert not result.has_image and not result.has_attachment


def test_markdown_image_syntax_embeds_uploaded_images_and_audio() -> None:
    result = render("look ![a cat](/user_uploads/2/cd/cat.png) and ![](/user_uploads/2/ef/song.mp3)")
    assert result.html == (
        '<p>look <img alt="a cat" class="inline-image" src="/user_uploads/2/cd/cat.png"> and '
        '<audio controls="" preload="metadata" src="/user_uploads/2/ef/song.mp3" title="song.mp3">'
        "</audio></p>"
    )
    assert result.has_image and result.has_attachment
    assert result.links == ("/user_uploads/2/cd/cat.png", "/user_uploads/2/ef/song.mp3")


def test_uploaded_videos_get_a_player_preview() -> None:
    result = render("[clip](/user_uploads/2/ab/clip.mp4)")
    assert result.html.endswith(
        '<div class="message_inline_image message_inline_video"><a href="/user_uploads/2/ab/clip.mp4" '
        'rel="noopener noreferrer"><video preload="metadata" src="/user_uploads/2/ab/clip.mp4"></video>'
        "</a></div>"
    )
    assert not result.has_image


def test_previews_follow_the_top_level_block_but_stay_inside_spoilers_and_skip_quotes() -> None:
    listed = html("- [a](/user_uploads/1/a.png)\n- b")
    assert listed.startswith("<ul>") and listed.index("</ul>") < listed.index("message_inline_image")
    spoiler = html("```spoiler\n[a](/user_uploads/1/a.png)\n```")
    assert spoiler.index("message_inline_image") < spoiler.index("</div></div>")
    quoted = render("> [a](/user_uploads/1/a.png)")
    assert "message_inline_image" not in quoted.html and not quoted.has_image


def test_links_into_the_realm_become_relative() -> None:
    result = render(
        "https://zulip.example.com/user_uploads/2/ab/x.txt https://zulip.example.com/#narrow/is/starred"
    )
    assert result.html == (
        f'<p><a href="user_uploads/2/ab/x.txt" {LINK_ATTRS}>'
        "https://zulip.example.com/user_uploads/2/ab/x.txt</a> "
        f'<a href="#narrow/is/starred" {LINK_ATTRS}>https://zulip.example.com/#narrow/is/starred</a></p>'
    )
    assert result.has_attachment


def test_global_times() -> None:
    assert html("at <time:2024-05-01T10:00:00+02:00> or <time:1700000000>") == (
        '<p>at <time datetime="2024-05-01T08:00:00Z">2024-05-01T10:00:00+02:00</time> or '
        '<time datetime="2023-11-14T22:13:20Z">1700000000</time></p>'
    )
    assert html("<time:soon>") == "<p>&lt;time:soon&gt;</p>"


# -- sanitizing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "<div class='spoiler-block'>fake</div>",
        "<!-- comment -->",
    ],
)
def test_raw_html_is_shown_as_text(content: str) -> None:
    result = html(content)
    assert "<script" not in result and "<img" not in result and "<div" not in result
    assert "<!--" not in result
    assert "&lt;" in result


@pytest.mark.parametrize(
    "content",
    [
        "[x](javascript:alert(1))",
        "[x](JAVASCRIPT:alert(1))",
        "[x](vbscript:msgbox)",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "<javascript:alert(1)>",
        "![x](javascript:alert(1))",
        "javascript://%0aalert(1)",
        "<foo:bar>",
        "<file:///etc/passwd>",
    ],
)
def test_dangerous_urls_never_become_links(content: str) -> None:
    result = render(content)
    assert "href" not in result.html and "<a" not in result.html
    assert result.links == ()


def test_linkifier_cannot_produce_a_script_url() -> None:
    result = render("#12", linkifiers=(LinkifierRef(r"#(?P<id>\d+)", "javascript:alert({id})"),))
    assert "javascript" not in result.html
    assert "href" not in result.html


def test_sanitizer_keeps_only_our_markup() -> None:
    dirty = (
        '<p onclick="x" class="evil">a</p><span class="user-mention evil emoji-zzz emoji-1f604" '
        'data-user-id="1" style="color:red" role="button">b</span><a href="/x" target="_top" '
        'class="stream other">c</a><iframe src="https://x"></iframe><img src="javascript:alert(1)">'
        '<th style="text-align:left;background:url(x)">d</th>'
    )
    assert sanitize(dirty) == (
        '<p>a</p><span class="user-mention emoji-1f604" data-user-id="1">b</span>'
        '<a href="/x" class="stream" rel="noopener noreferrer">c</a><img>d'
    )
    # Alignment survives only as one of its classes; no inline style (the CSP drops them).
    cell = '<table><tr><td style="text-align:left" class="text-align-left x">d</td></tr></table>'
    assert sanitize(cell) == '<table><tbody><tr><td class="text-align-left">d</td></tr></tbody></table>'


# -- other entry points --------------------------------------------------------------------------


def test_render_markdown_for_descriptions_has_emoji_but_no_mentions() -> None:
    assert render_markdown("We **ship** :tada: @**King Hamlet** #**Verona**") == (
        '<p>We <strong>ship</strong> <span aria-label="tada" class="emoji emoji-1f389" role="img" '
        'title="tada">:tada:</span> @<strong>King Hamlet</strong> #<strong>Verona</strong></p>'
    )
    assert render_markdown("+1 555") == "<p>+1 555</p>"


def test_possible_names() -> None:
    content = "@**King Hamlet** @_**Iago|11** @**|12** @**all** @**topic** @*support* @_*staff* #**Verona>t**"
    assert possible_mention_names(content) == {"King Hamlet", "Iago"}
    assert possible_mention_ids(content) == {11, 12}
    assert possible_group_names(content) == {"support", "staff"}
    assert possible_channel_names(content + " #**Denmark news**") == {"Verona", "Denmark news"}


def test_topic_links() -> None:
    assert topic_links("#12 see https://example.com/x. and #7", [ISSUES]) == [
        {"text": "#12", "url": "https://github.com/zulip/zulip/issues/12"},
        {"text": "https://example.com/x", "url": "https://example.com/x"},
        {"text": "#7", "url": "https://github.com/zulip/zulip/issues/7"},
    ]
    assert topic_links("plain topic", [ISSUES]) == []


def test_linkifier_that_would_backtrack_renders_in_linear_time() -> None:
    # With Python's backtracking engine this message took seconds, doubling per character.
    evil = (LinkifierRef(r"(?P<id>(x+x+)+)y", "https://x.example/{id}"),)
    started = time.perf_counter()
    result = render("x" * 5000 + " xxy", linkifiers=evil)
    assert time.perf_counter() - started < 1.0
    assert result.links == ("https://x.example/xx",)


def test_adjacent_linkifier_matches_each_need_a_word_start() -> None:
    assert render("#1,#2 #3#4 é#5").links == (
        "https://github.com/zulip/zulip/issues/1",
        "https://github.com/zulip/zulip/issues/2",
        "https://github.com/zulip/zulip/issues/3",
    )
