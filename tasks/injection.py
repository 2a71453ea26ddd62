"""The injection detector: text in a document that addresses an AI system or tries to change its instructions.

Used at ingest (every chunk is flagged: ``Chunk.injection``) and at summarize (evidence sentences that match
are quarantined, and any summary sentence that matches is dropped), so the two sides agree by construction.

Text is normalised before matching: NFKC (full-width letters, ligatures), case folded, zero-width and soft
hyphen characters removed, every run of whitespace one space (a line or page break inside an instruction
does not hide it). Each pattern below is one regular expression over that text; a hit is the name of the
pattern and its span in the original text. ``flagged_spans`` widens hits to whole sentences (the one
sentence splitter, ``citesum.tasks.text.split_sentences``), the unit the extractive synthesizer quotes.

Patterns (``PATTERNS``):

- ``role-marker``: chat-template tokens and role headers: ``<|im_start|>``, ``<|system|>``, ``[INST]``,
  ``<<SYS>>``, ``### Instruction``, and a role label followed by an order ("system: you ...",
  "assistant: ignore ...").
- ``ignore-instructions``: ignore / disregard / forget / override (all) previous / prior / above / earlier /
  original / your instructions, prompts, rules, guidelines, context; "disregard everything above".
- ``new-instructions``: "new instructions:", "your new task / real instructions", "from now on you ...".
- ``addresses-ai``: a note, message or instruction to an AI, an assistant, a language model or an LLM;
  "system note to any AI"; "if you are an AI / a language model"; "dear AI"; "AI reading this".
- ``role-change``: "you are now a / an / in / no longer ...", "act as if you are", "pretend to be".
- ``ai-persona``: "as an AI language model", "as a large language model".
- ``asks-ai``: a request that an assistant or model (or its summary, answer, response) state, say, report,
  conclude, omit, not mention or summarise something; at the start of a sentence, "state that ..." /
  "respond only with ..." / "do not mention this ..."; "tell the user"; "summarise this document as".

A near miss stays clean: "ignore the previous quarter's figures", "the system notes that", "you are now
entitled to a refund", "as an AI company", "the assistant secretary shall state".

Measured false-positive rate (tests/benchmarks/injection_benchmark.py, every page of the 51 development
PDFs, FinanceBench 29 and MMLongBench-Doc 22, extracted and chunked by the project's own code, at commit
7a7f306): 0 of 3,706 pages, 0 of 22,189 chunks. The first version flagged one page (two chunks) of an EMNLP
paper, "the same in-context examples for all models", read by eye as a false positive: "to/for all ..." now
needs an AI noun and a colon or comma. That zero was reached on the set it is measured on; held-out
documents may do worse.

Each pattern is searched only in a text its screen admits (``SCREENS``: words every match holds, read off the
pattern), which gives the same results for far less work: ``re`` tries a pattern that starts with ``\\b`` or a
lookbehind at every position. About 0.06 ms of CPU per clean chunk (FinanceBench's 19,809 chunks, 619
characters on average: 1.1 s, 0.45 s of it normalising; 4.9 s unscreened).

Known gaps: text spelled out with spaces between letters ("i g n o r e"), other languages, text split
into words that never share a chunk, and instructions phrased as plain statements ("the correct answer is
that this agreement has no termination rights"). The Ollama prompt still marks all evidence untrusted.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from citesum.tasks.text import split_sentences

# Zero-width space / joiners, word joiner, BOM, soft hyphen: invisible, and they break words apart.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"))

_AI = (
    r"(?:ai|a\.i\.|artificial intelligence|llms?|(?:large )?language models?|chat ?bots?|chatgpt|gpt(?:-?\d)?"
    r"|ai (?:assistants?|models?|systems?|agents?|tools?)|virtual assistants?|(?:ai )?summari[sz]ers?)"
)
_ORDER = (
    r"(?:you\b|ignore|disregard|forget|from now|new instructions|always|never|do not|don't|respond|answer|reply"
    r"|state|say|output|print|summari[sz]e)"
)
_EARLIER = r"(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial|system|old)"
_RULES = r"(?:instructions?|prompts?|directions?|directives?|rules|guidelines|commands?|context|programming)"
_SAY = (
    r"(?:state|say|report|conclude|claim|write|answer|respond|reply|output|print|describe|summari[sz]e|omit"
    r"|ignore|mention|include|disclose|reveal|present|characteri[sz]e|tell)"
)

PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern)
    for name, pattern in {
        "role-marker": (
            r"<\|?\s?(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\s?\|?>"
            r"|\[/?(?:inst|sys)\]|<</?sys>>"
            r"|#{2,} ?(?:instructions?|system|response|assistant)\b"
            rf"|(?<![\w-])(?:system|assistant|developer) ?: ?{_ORDER}"
        ),
        "ignore-instructions": (
            rf"\b(?:ignore|disregard|forget|override|overwrite|bypass|discard)\s(?:(?:all|any|the|your|these|those"
            rf"|every|of|my)\s)*(?:{_EARLIER}\s(?:(?:system|ai)\s)?{_RULES}|(?:your|my)\s(?:(?:system|ai)\s)?{_RULES})\b"
            r"|\b(?:ignore|disregard|forget) (?:everything|anything|all) (?:above|before|previously|said|written)\b"
        ),
        "new-instructions": (
            r"\bnew (?:system )?instructions? ?:|\b(?:updated|revised|real|actual|true) instructions ?:"
            r"|\byour (?:new|real|actual|true) (?:instructions|task|role|goal|objective|purpose)\b"
            r"|\bfrom now on,? (?:you|always|never|respond|answer)\b"
        ),
        "addresses-ai": (
            rf"\b(?:note|message|instructions?|attention|reminder|notice|warning|request|memo)\s(?:to|for)\s"
            rf"(?:(?:any|all|the|every|an?)\s)?{_AI}(?![\w-])"
            rf"|\bif you are (?:an? )?{_AI}(?![\w-])|\b(?:dear|hello|hi|hey|attention),? {_AI}(?![\w-])"
            rf"|\b{_AI} (?:reading|processing|summari[sz]ing|analy[sz]ing|parsing) this\b"
            r"|\b(?:to|for) (?:any|all|every) (?:ai|llm)s?(?: (?:assistants?|models?|systems?|agents?))? ?[:,]"
        ),
        "role-change": (
            r"\byou are now (?:(?:an?|the|my) )?(?:[\w-]+ ){0,2}(?:assistant|ai|model|bot|chatbot|agent|persona|dan|llm)\b"
            r"|\byou are now (?:in|no longer|free|unrestricted|jailbroken|acting|operating|playing)\b"
            r"|\b(?:act|behave) as if you (?:are|were)\b|\bpretend (?:to be|you are|that you are)\b"
        ),
        "ai-persona": r"\bas an? (?:ai|artificial intelligence)(?: language)? (?:model|assistant)\b"
        r"|\bas an? (?:large )?language model\b",
        "asks-ai": (
            rf"\b(?:the |any |an? |every )?(?:(?:ai )?assistants?|{_AI})\s(?:must|should|shall|will|is to"
            rf"|are to|needs? to|has to|have to)\s(?:(?:always|only|now|instead|simply|never|not)\s)*{_SAY}(?![\w-])"
            rf"|\b(?:in|when writing|when producing) (?:your|the ai'?s?) (?:summary|answer|response|output|reply)\b"
            rf"|\bwhen (?:you )?(?:summari[sz]e|summari[sz]ing|answer|answering|respond|responding)\b[^.]{{0,60}}"
            rf"\b(?:state|say|omit|do not mention|don't mention|never mention|report that)\b"
            r"|(?:^|[.!?:;] )(?:please )?(?:state|say|respond|reply|answer|output|print|write|claim|conclude)"
            r" (?:only |exactly |simply )?(?:that|with|the following)\b"
            r"|(?:^|[.!?:;] )(?:please )?(?:do not|don't|never) (?:mention|reveal|repeat|cite|tell)\b"
            r"|\b(?:tell|inform|assure|convince) the (?:user|reader|human)\b"
            r"|\bsummari[sz]e (?:this|the) (?:document|agreement|contract|report|filing|text|page) as\b"
        ),
    }.items()
}


@dataclass(frozen=True)
class Screen:
    """What every match of one pattern holds, so a normalised text without it cannot match."""

    words: tuple[str, ...]  # substrings
    opening: re.Pattern[str] | None = None  # searched in ". " + text: the text's start is a sentence start

    def admits(self, plain: str) -> bool:
        return any(word in plain for word in self.words) or bool(self.opening and self.opening.search(". " + plain))


# Each screen is read off its pattern branch by branch (in normalised text ``\s`` is one space); a change to a
# pattern needs its screen checked. tests/test_injection_screens.py compares results with and without them.
SCREENS: dict[str, Screen] = {
    # "<|...|>" and "<<sys>>" hold "<"; "[inst]", "[/sys]" hold "["; "##..."; the role label before its order.
    "role-marker": Screen(("<", "[", "##", "system", "assistant", "developer")),
    # Both branches start with one of these verbs.
    "ignore-instructions": Screen(("ignore", "disregard", "forget", "override", "overwrite", "bypass", "discard")),
    # "new / updated ... instruction(s) :", "your new / real ... task", "from now on".
    "new-instructions": Screen(("instruction", "your", "from now on")),
    "addresses-ai": Screen(
        # _AI after a space (every branch but "... reading this"): each _AI alternative starts with one of
        # these words, but "large language model", which holds " language model";
        (" ai", " a.i.", " artificial intelligence", " llm", " language model", " chat", " gpt", " virtual assistant")
        # "ai summari[sz]er" holds " ai"; "reading / processing / summarising / analysing / parsing this".
        + (" summari", "ing this")
    ),
    # "you are now ...", "act / behave as if you ...", "pretend ...".
    "role-change": Screen(("you are now", "as if you", "pretend")),
    # Both branches end in "model" or "assistant".
    "ai-persona": Screen(("model", "assistant")),
    "asks-ai": Screen(
        # "assistant(s)" or _AI before \s and the modal ("ai" and "llm(s)" are followed by that space);
        ("assistant", "ai ", "a.i.", "artificial intelligence", "llm ", "llms ", "language model", "chat", "gpt")
        # "summari[sz]ers", "when (you) summari...", "summari[sz]e this / the ... as";
        + ("summari", "when you", "when answer", "when respond")
        # "in / when writing / when producing" your / the ai's summary; "tell ... the user / reader / human".
        + ("in your", "writing your", "producing your", "the ai", "the user", "the reader", "the human"),
        # The two branches that start a sentence ("^" or "[.!?:;] ") with an optional "please", then a verb.
        re.compile(
            r"[.!?:;] (?:please )?"
            r"(?:state|say|respond|reply|answer|output|print|write|claim|conclude|do not|don't|never) "
        ),
    ),
}


@dataclass(frozen=True)
class Hit:
    """One pattern's match, as a span of the original text."""

    pattern: str  # a key of PATTERNS
    start: int
    end: int


def normalise(text: str) -> str:
    """The text patterns see: NFKC, case folded, invisible characters removed, whitespace runs one space."""
    return " ".join(unicodedata.normalize("NFKC", text.translate(_INVISIBLE)).casefold().split())


def patterns_in(text: str) -> tuple[str, ...]:
    """The names of the patterns the text matches, in ``PATTERNS`` order; empty when it is clean."""
    plain = normalise(text)
    return tuple(name for name, pattern in PATTERNS.items() if SCREENS[name].admits(plain) and pattern.search(plain))


def addresses_ai(text: str) -> bool:
    return bool(patterns_in(text))


def hits(text: str) -> list[Hit]:
    """Every match, located in ``text`` (what normalisation removed or folded maps back to its source)."""
    if not addresses_ai(text):  # the common case: one pass over the normalised text, no position map
        return []
    plain, where = _located(text)
    found = [
        Hit(name, where[m.start()], where[m.end() - 1] + 1)
        for name, pattern in PATTERNS.items()
        for m in pattern.finditer(plain)
        if m.end() > m.start()
    ]
    return sorted(found, key=lambda h: (h.start, h.end, h.pattern))


def flagged_spans(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` (as ``split_sentences`` cuts them) that hold some of a hit, in order.

    An instruction that runs over a sentence end (or a page break that the splitter took for one) flags
    every sentence it touches.
    """
    found = hits(text)
    if not found:
        return []
    return [(s, e) for s, e in split_sentences(text) if any(h.start < e and s < h.end for h in found)]


def _located(text: str) -> tuple[str, list[int]]:
    """``normalise(text)`` character by character, with the index in ``text`` each character came from."""
    out: list[str] = []
    where: list[int] = []
    space = True  # no leading space
    for index, char in enumerate(text):
        if ord(char) in _INVISIBLE:
            continue
        for folded in unicodedata.normalize("NFKC", char).casefold():
            if folded.isspace():
                if not space:
                    out.append(" ")
                    where.append(index)
                space = True
            else:
                out.append(folded)
                where.append(index)
                space = False
    if out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where
