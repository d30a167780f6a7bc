"""The boards' model search box (?q=): a model id or the start of one of its parts, any case, never an
arbitrary substring ("ova" finding deepgram/nova-3 read as a bug)."""

import pytest

from voxwatch.web.board_views import model_matches


@pytest.mark.parametrize("q, found", [("NOVA", True), ("deepgram/", True), ("deepgram/nova-3", True), ("Deep", True),
                                      ("ova", False), ("3", False), ("gram", False), ("", False)])
def test_the_model_search_matches_ids_and_their_starts_not_substrings(q: str, found: bool):
    assert model_matches(q, "deepgram/nova-3") is found
    cascade = "cascade/deepgram/nova-3+openai/gpt-4.1-mini-2025-04-14+cartesia/sonic-3.5-2026-05-04"
    assert model_matches("gpt-4.1", cascade) and model_matches("cartesia/", cascade) and not model_matches("mini", cascade)
