"""Whether an answer is in a text: one rule for the retrieval evaluation's "answer in evidence" and
the summary evaluation's "answer found".

A figure ("$1577.00", "24.3%", "1,577") is found as a number of the text, formatting aside and rounded
half up to the answer's precision; any other answer as whole words, case, punctuation and thousands
separators aside; a list answer ("['UK', 'Israel']") when every item is. Whole numbers and words
matter: a substring test finds "5" in "2015" and "Yes" in "Yesterday".
"""

from __future__ import annotations

import ast
import re
from decimal import ROUND_HALF_UP, Decimal

from citesum.tasks.text import words

_FIGURE = re.compile(r"[-+]?\$?\s*(\d[\d,]*(?:\.\d+)?|\.\d+)\s*%?")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?|(?<![\w.])\.\d+")


def figure(answer: str) -> float | None:
    """The value of an answer that is a figure ("$1577.00", "24.3%", "-3.7", "1,577"), else None."""
    match = _FIGURE.fullmatch(answer.strip().rstrip("."))
    if not match:
        return None
    value = float(match.group(1).replace(",", ""))
    return -value if answer.strip().startswith("-") else value


def _decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def _figure_in(answer: str, text: str) -> bool:
    """A number of the text equals the figure, or rounds half up to it at the figure's precision ("24.26" ~
    24.2587, "2.0" ~ 1.95). Decimal, as written: a float rounds 1.95 down, its nearest binary value being below."""
    value = Decimal(str(figure(answer)))
    step = Decimal(1).scaleb(-_decimals(_FIGURE.fullmatch(answer.strip().rstrip(".")).group(1)))
    for raw in _NUMBER.findall(text):
        number = Decimal(raw.replace(",", ""))
        for candidate in (number, -number) if value < 0 else (number,):
            if candidate == value or candidate.quantize(step, rounding=ROUND_HALF_UP) == value:
                return True
    return False


def _plain(text: str) -> str:
    """Lower case, letters and digits only, single spaces, padded: whole-word containment by ``in``."""
    return f" {' '.join(w.lower() for w in words(text.replace(',', '')))} "


def _answer_items(answer: str) -> list[str]:
    """A list answer ("['UK', 'Israel']") as its items; any other answer as itself."""
    text = answer.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            items = None
        if isinstance(items, list) and items:
            return [str(item) for item in items]
    return [text]


def answer_found(answer: str | None, text: str) -> bool:
    """Every item of the answer is in the text: a figure as a number (formatting and rounding aside),
    anything else as whole words, case, punctuation and thousands separators aside."""
    if not answer or not answer.strip():
        return False
    plain = _plain(text)
    for item in _answer_items(answer):
        if figure(item) is not None:
            if not _figure_in(item, text):
                return False
        elif _plain(item).strip() == "" or _plain(item) not in plain:
            return False
    return True
