"""The reports' shared parts without a browser: what a table refuses, escapes and marks."""

from __future__ import annotations

import pytest

from orderbatch.reports import Column, Mark, Notes, Page, Table


def test_a_row_with_a_missing_cell_is_refused_rather_than_shifting_the_columns() -> None:
    table = Table([Column("app", numeric=False), Column("seconds")], [["a", 1.0], ["b"]])

    with pytest.raises(ValueError, match="a row of 1 cells in a table of 2 columns"):
        Page("t").add(table).render()


def test_text_from_a_run_is_shown_as_text_never_as_markup() -> None:
    cause = "<script>alert(1)</script> & 'quoted'"
    page = (
        Page("<title>")
        .add(Table([Column("cause", numeric=False, long_text=True)], [[cause]], element_id="summary"))
        .add(Notes([cause]))
        .render()
    )

    assert "<script>alert" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#x27;quoted&#x27;") == 2
    assert "<h1>&lt;title&gt;</h1>" in page


def test_a_mark_says_met_missed_or_not_judged_and_its_detail() -> None:
    assert "✓ met" in Mark(True).html()
    assert "✗ missed" in Mark(False, "compared with tuned").html()
    assert "compared with tuned" in Mark(False, "compared with tuned").html()
    assert "not judged" in Mark(None).html()
    assert "✓ yes" in Mark(True, words=("yes", "no")).html()
    assert 'data-met="missed"' in Mark(False, words=("yes", "no")).html()
