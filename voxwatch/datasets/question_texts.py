"""The bundled spoken questions (s2s-questions): short questions with one unambiguous short answer.

The project's own text. Each question carries its accepted answers, several surface forms where a
reply may word it differently ("one hundred", "a hundred", "100"); number words and digits agree in
the match anyway (metrics.answers), so "twelve" also accepts "12". No answer is said by its own
question (manifest.Clip checks it): a reply that only echoes the question is never correct.
"""

from __future__ import annotations

# (utterance id, category, question, accepted answers)
QUESTIONS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("q01", "arithmetic", "What is seven plus five?", ("twelve", "12")),
    ("q02", "arithmetic", "What is nine minus four?", ("five", "5")),
    ("q03", "arithmetic", "What is six times three?", ("eighteen", "18")),
    ("q04", "arithmetic", "What is twenty divided by four?", ("five", "5")),
    ("q05", "arithmetic", "What is eight plus eight?", ("sixteen", "16")),
    ("q06", "arithmetic", "What is ten times ten?", ("one hundred", "a hundred", "100")),
    ("q07", "arithmetic", "What is fifteen minus seven?", ("eight", "8")),
    ("q08", "counting", "How many days are there in a week?", ("seven", "7")),
    ("q09", "counting", "How many legs does a spider have?", ("eight", "8")),
    ("q10", "counting", "How many months are there in a year?", ("twelve", "12")),
    ("q11", "counting", "How many minutes are there in an hour?", ("sixty", "60")),
    ("q12", "counting", "How many sides does a triangle have?", ("three", "3")),
    ("q13", "counting", "How many wheels does a bicycle have?", ("two", "2")),
    ("q14", "counting", "How many letters are in the word house?", ("five", "5")),
    ("q15", "colour", "What colour is the sky on a clear day?", ("blue",)),
    ("q16", "colour", "What colour is fresh grass?", ("green",)),
    ("q17", "colour", "What colour is snow?", ("white",)),
    ("q18", "colour", "What colour do you get when you mix red and white?", ("pink",)),
    ("q19", "calendar", "What day comes after Monday?", ("Tuesday",)),
    ("q20", "calendar", "What day comes before Sunday?", ("Saturday",)),
    ("q21", "calendar", "What month comes after March?", ("April",)),
    ("q22", "calendar", "What is the last month of the year?", ("December",)),
    ("q23", "capital", "What is the capital of France?", ("Paris",)),
    ("q24", "capital", "What is the capital of Japan?", ("Tokyo",)),
    ("q25", "capital", "What is the capital of Italy?", ("Rome",)),
    ("q26", "capital", "What is the capital of Germany?", ("Berlin",)),
    ("q27", "fact", "Which planet do we live on?", ("Earth",)),
    ("q28", "fact", "What do we call frozen water?", ("ice",)),
    ("q29", "fact", "Which animal says moo?", ("cow", "cows")),
    ("q30", "fact", "Which ocean is the largest?", ("Pacific",)),
    ("q31", "opposite", "What is the opposite of hot?", ("cold",)),
    ("q32", "opposite", "What is the opposite of up?", ("down",)),
)
