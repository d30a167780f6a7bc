"""The one series key (voxwatch/foundation/series_key.py): it must behave as the plain tuples it
replaced, so the leaderboard's order, its dict lookups and its JSON stay what they were."""

import json

from voxwatch.foundation.series_key import RowsKey, SeriesKey
from voxwatch.store.layout import SERIES

KEY = SeriesKey("tts", "m/x@1", "d", "eu", "4", "tts-stream", "whisper/base")


def test_a_key_is_the_plain_tuple_of_its_values():
    plain = tuple(KEY)
    assert KEY == plain and hash(KEY) == hash(plain)
    assert {plain: 1}[KEY] == 1 and {KEY: 1}[plain] == 1
    assert json.dumps(KEY) == json.dumps(plain)
    other = KEY._replace(model_id="a/y@1", instrument="")
    assert sorted([KEY, other]) == [other, KEY] and sorted([plain, tuple(other)]) == [tuple(other), plain]


def test_the_rows_key_is_the_middle_of_the_series_key_and_splits_back_into_it():
    assert RowsKey._fields == SeriesKey._fields[1:5] == SERIES
    assert KEY.rows_key == RowsKey("m/x@1", "d", "eu", "4") == KEY[1:5]
    assert KEY.rows_key.series(KEY.board, KEY.protocol, KEY.instrument) == KEY
    assert KEY.ranking_key == ("tts", "d", "tts-stream")
