"""Answer accuracy's match (METHOD "Answer accuracy (S2S single turn)", metrics/answers.py): an accepted
answer said un-negated in the reply transcript, both on the entity canonical form."""

from __future__ import annotations

import pytest

from voxwatch.metrics.answers import answer_correct, checked_answers

TWELVE = ("twelve", "12")


@pytest.mark.parametrize("reply", [
    "Twelve.", "12", "The answer is 12!", "It's twelve.", "Seven plus five is twelve.", "TWELVE", "twelve...",
    "Um, I think it's twelve, yes.", "It is twelve, not thirteen.", "Not thirteen: twelve.",
])
def test_the_answer_said_in_any_form_is_correct(reply):
    assert answer_correct(TWELVE, reply)


@pytest.mark.parametrize("reply", [
    "one hundred and twelve",  # 112: the right digits inside a wrong number
    "112", "120", "21", "1 2 0",
    "twelve point five",  # 12.5
    "Thirteen.", "", "I don't know.",
    "It is not twelve.", "It isn't twelve.", "never twelve", "It's not twelve, it's eleven.",
])
def test_a_wrong_number_a_negated_answer_or_no_answer_is_wrong(reply):
    assert not answer_correct(TWELVE, reply)


def test_digits_and_number_words_agree_both_ways():
    assert answer_correct(["12"], "twelve") and answer_correct(["twelve"], "12")
    assert answer_correct(["one hundred"], "It is a hundred.") and answer_correct(["100"], "one hundred")
    assert answer_correct(["sixty"], "There are 60 minutes in an hour.")
    assert not answer_correct(["sixty"], "sixteen") and not answer_correct(["sixteen"], "sixty")


def test_words_punctuation_and_case_do_not_matter_and_words_must_be_whole():
    assert answer_correct(["Paris"], "paris!") and answer_correct(["Tuesday"], "It's TUESDAY, of course.")
    assert answer_correct(["Pacific"], "The Pacific Ocean is the largest.")
    assert answer_correct(["the Pacific"], "It's the Pacific.")
    assert not answer_correct(["cow"], "A coward says nothing.")  # a whole token, not a substring
    assert not answer_correct(["ice"], "Frozen water is called slice.")  # nor the end of one
    assert not answer_correct(["Pacific"], "Not the Pacific, the Atlantic.")  # an article between the negation


def test_any_accepted_form_is_enough_and_none_is_never():
    assert answer_correct(["cow", "cows"], "Cows say moo.")
    assert not answer_correct([], "twelve")


def test_a_questions_answers_are_checked_against_the_question():
    assert checked_answers(["twelve", "12"], "What is seven plus five?") == ("twelve", "12")
    with pytest.raises(ValueError, match=r"answers\[1\]: 'five' is said by the question"):
        checked_answers(["4", "five"], "What is nine minus five?")
    with pytest.raises(ValueError, match="non-empty list"):
        checked_answers("twelve", "What is seven plus five?")
    with pytest.raises(ValueError, match=r"answers\[0\]: '\?' is not an answer"):
        checked_answers(["?"], "What is seven plus five?")


def test_numbers_in_two_clauses_stay_two_numbers_and_a_number_with_its_punctuation_stays_one():
    assert answer_correct(TWELVE, "Twelve. 12.")  # the canonical form alone would join them: "1212"
    assert answer_correct(TWELVE, "Thirteen? No: twelve.")
    assert answer_correct(["twelve hundred"], "It is 1,200.") and not answer_correct(TWELVE, "It is 12.5 now.")
    assert answer_correct(TWELVE, "twelve, or maybe thirteen")  # a hedge says the answer (the rule's stated limit)
