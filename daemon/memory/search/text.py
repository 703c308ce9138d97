"""Text handling for search_memory: query analysis, snippets, dates.

The query goes through the same tokenizer as the index (FTS5 ``porter unicode61
remove_diacritics 2``, called through apsw), so a query word and the words of
the documents meet as the same stem. Words, not syntax, reach FTS5: each kept
word is later quoted, which is what makes every input safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import apsw

#: The index's tokenizer arguments (schema/sql/memory: learnings_fts, turns_fts).
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])
#: Longer input is cut here: a question is short, and a pasted page needs only its start.
MAX_QUERY_CHARS = 4000
#: Distinct terms kept from one query (the OR query and the re-scoring stay bounded).
MAX_TERMS = 24
#: Weight of a light verb against a content word.
LIGHT_WEIGHT = 0.5


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# English function words (the common IR stop list): they carry no topic. Checked against
# the lower-cased word and its stem ("s" and "t" are what "it's" and "don't" leave behind).
STOP_WORDS = _words("""
a about above after again against all am an and any are aren as at be because been before being
below between both but by can couldn could d did didn do does doesn doing don down during each
few for from further had hadn has hasn have haven having he her here hers herself him himself
his how i if in into is isn it its itself just ll m ma me mightn more most mustn my myself
needn no nor not now o of off on once only or other our ours ourselves out over own re s same
shan she should shouldn so some such t than that the their theirs them themselves then there
these they this those through to too under until up ve very was wasn we were weren what when
where which while who whom why will with would wouldn y you your yours yourself yourselves
another else every may might must shall whose yet
""")
# Verbs (and a few fillers) so common in questions that they say little about the topic:
# kept, at half weight, since "what did she buy" still needs "buy" but not "did".
LIGHT_WORDS = _words("""
go goes going went gone get gets getting got gotten make makes making made do does done take
takes took taken come came give gave given say says said tell told want wants wanted like likes
liked think thought know knew known see saw seen use used put let seem become became keep kept
thing things something anything way also ever really
""")
# English irregular verbs: a question asks "did she lose" where a note says "lost", and no
# stemmer joins the two. Each group is one verb's forms; a query word brings its group along.
_IRREGULAR = """
arise arose arisen|awake awoke awoken|bear bore born borne|beat beaten|become became|begin began
begun|bend bent|bet|bid|bind bound|bite bit bitten|bleed bled|blow blew blown|break broke broken|
breed bred|bring brought|build built|burn burnt|buy bought|catch caught|choose chose chosen|
cling clung|come came|cost|creep crept|cut|deal dealt|dig dug|draw drew drawn|dream dreamt|
drink drank drunk|drive drove driven|eat ate eaten|fall fell fallen|feed fed|feel felt|
fight fought|find found|flee fled|fly flew flown|forbid forbade forbidden|forget forgot forgotten|
forgive forgave forgiven|freeze froze frozen|get got gotten|give gave given|go went gone|
grind ground|grow grew grown|hang hung|have had|hear heard|hide hid hidden|hit|hold held|hurt|
keep kept|kneel knelt|know knew known|lay laid|lead led|lean leant|leap leapt|learn learnt|
leave left|lend lent|let|lie lay lain|light lit|lose lost|make made|mean meant|meet met|
pay paid|prove proven|put|quit|read|ride rode ridden|ring rang rung|rise rose risen|run ran|
say said|see saw seen|seek sought|sell sold|send sent|set|sew sewn|shake shook shaken|shine shone|
shoot shot|show shown|shrink shrank shrunk|shut|sing sang sung|sink sank sunk|sit sat|
sleep slept|slide slid|speak spoke spoken|speed sped|spend spent|spin spun|split|spread|
spring sprang sprung|stand stood|steal stole stolen|stick stuck|sting stung|stink stank|
strike struck|strive strove striven|swear swore sworn|sweep swept|swim swam swum|swing swung|
take took taken|teach taught|tear tore torn|tell told|think thought|throw threw thrown|
understand understood|wake woke woken|wear wore worn|weave wove woven|weep wept|win won|
wind wound|write wrote written|child children|person people|man men|woman women|mouse mice|
foot feet|tooth teeth
"""
IRREGULAR_FORMS: dict[str, tuple[str, ...]] = {
    form: tuple(group.split())
    for group in " ".join(_IRREGULAR.split()).replace("| ", "|").split("|")
    for form in group.split()
}
# "what kind of X": the framing word is not what is asked about.
_FRAMERS = frozenset({"kind", "kinds", "type", "types", "sort", "sorts"})
# "how long", "how often": the second word frames the question.
_HOW = frozenset({"long", "often", "much", "many", "far", "old"})


@dataclass(frozen=True)
class Term:
    """One query term: the surface word (matched through FTS5), its stem, its weight."""

    word: str
    stem: str
    weight: float
    forms: tuple[str, ...] = ()  # other forms of the same word (irregular verbs, plurals)


_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for name in names.split()
}
# Month names that are common words too count only next to a number ("May 23", "March 2024").
_AMBIGUOUS_MONTHS = frozenset({"may", "march", "mar", "jan", "sep", "oct", "dec", "jun", "aug"})


@dataclass(frozen=True)
class DateHint:
    """A period the question names ("in June", "on 13 October 2023", "in 2023"): memories
    dated in it match, as if they said so (a note rarely repeats its own date)."""

    year: int | None
    month: int | None
    day: int | None
    stems: tuple[str, ...]  # the query words that named it, folded into this one concept

    @property
    def key(self) -> str:
        return f"@date:{self.year or '*'}-{self.month or '*'}-{self.day or '*'}"

    def matches(self, ts: float) -> bool:
        """Whether a UTC timestamp falls in the period (a day matches one day either side)."""
        try:
            when = datetime.fromtimestamp(ts, UTC)
        except (OverflowError, OSError, ValueError):
            return False
        if (self.year and when.year != self.year) or (self.month and when.month != self.month):
            return False
        return not self.day or abs(when.day - self.day) <= 1

    def span(self) -> tuple[float, float] | None:
        """[start, end) epochs of the period, when it has a year (else None)."""
        if not self.year:
            return None
        if not self.month:
            start, end = (
                datetime(self.year, 1, 1, tzinfo=UTC),
                datetime(self.year + 1, 1, 1, tzinfo=UTC),
            )
        else:
            start = datetime(self.year, self.month, max(1, (self.day or 1) - 1), tzinfo=UTC)
            nxt = (self.year + self.month // 12, self.month % 12 + 1)
            end = datetime(*nxt, 1, tzinfo=UTC)
            if self.day:
                end = min(
                    end,
                    datetime(self.year, self.month, min(self.day, 27), tzinfo=UTC)
                    + timedelta(days=2),
                )
        return start.timestamp(), end.timestamp()


def date_hints(tokens: list[tuple[str, str]]) -> list[DateHint]:
    """Dates named in the query's (word, stem) tokens: month (+ day, year) or a lone year."""
    hints: list[DateHint] = []
    used: set[int] = set()

    def number(i: int, low: int, high: int) -> int | None:
        if 0 <= i < len(tokens):
            digits = (
                tokens[i][0]
                .removesuffix("st")
                .removesuffix("nd")
                .removesuffix("rd")
                .removesuffix("th")
            )
            if digits.isdigit() and low <= int(digits) <= high:
                return int(digits)
        return None

    for i, (word, _stem) in enumerate(tokens):
        month = _MONTHS.get(word)
        if month is None:
            continue
        day_at = next((j for j in (i - 1, i + 1) if number(j, 1, 31) is not None), None)
        year_at = next((j for j in (i + 1, i + 2, i + 3) if number(j, 1970, 2099)), None)
        if word in _AMBIGUOUS_MONTHS and day_at is None and year_at is None:
            continue
        at = [i] + [j for j in (day_at, year_at) if j is not None]
        used.update(at)
        hints.append(
            DateHint(
                number(year_at, 1970, 2099) if year_at is not None else None,
                month,
                number(day_at, 1, 31) if day_at is not None else None,
                tuple(tokens[j][1] for j in at),
            )
        )
    for i, (_word, stem) in enumerate(tokens):
        year = number(i, 1970, 2099)
        if year and i not in used:
            month, day = number(i + 1, 1, 12), number(i + 2, 1, 31)  # 2023-10-13
            if month and day:
                stems = (stem, tokens[i + 1][1], tokens[i + 2][1])
                hints.append(DateHint(year, month, day, stems))
                used.update((i + 1, i + 2))
            else:
                hints.append(DateHint(year, None, None, (stem,)))
    return hints


def tokenizer(conn: apsw.Connection) -> apsw.FTS5Tokenizer:
    """The index's tokenizer, bound to ``conn``."""
    return conn.fts5_tokenizer(TOKENIZER[0], list(TOKENIZER[1]))


def spans(tok: apsw.FTS5Tokenizer, data: bytes, query: bool = False) -> list[tuple[int, int, str]]:
    """(start byte, end byte, stem) of each token of UTF-8 ``data``."""
    flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    out = []
    for item in tok(data, flags, None, include_colocated=False):
        if isinstance(item, tuple) and len(item) >= 3:
            out.append((int(item[0]), int(item[1]), str(item[2])))
    return out


def stems(tok: apsw.FTS5Tokenizer, text: str) -> list[str]:
    """The stems of ``text`` in order, as the index stores them."""
    data = text.encode("utf-8", "replace")
    return [
        str(t)
        for t in tok(
            data, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=False, include_colocated=False
        )
    ]


def clean_query(query: object) -> bytes:
    """Any object as bounded UTF-8 without NULs (lone surrogates become '?')."""
    text = query if isinstance(query, str) else ("" if query is None else str(query))
    return text[:MAX_QUERY_CHARS].replace("\x00", " ").encode("utf-8", "replace")


def analyze(tok: apsw.FTS5Tokenizer, query: object) -> tuple[list[Term], list[DateHint]]:
    """The weighted terms of a natural-language query, and the dates it names."""
    data = clean_query(query)
    tokens = [
        (data[start:end].decode("utf-8", "replace").lower(), stem)
        for start, end, stem in spans(tok, data, query=True)
    ]
    dates = date_hints(tokens)
    named = {stem for hint in dates for stem in hint.stems}
    terms: dict[str, Term] = {}
    for i, (word, stem) in enumerate(tokens):
        if (word in STOP_WORDS or stem in STOP_WORDS or not stem) and stem not in named:
            continue
        after = tokens[i + 1][0] if i + 1 < len(tokens) else ""
        before = tokens[i - 1][0] if i else ""
        if (word in _FRAMERS and after == "of") or (before == "how" and word in _HOW):
            continue
        weight = LIGHT_WEIGHT if word in LIGHT_WORDS else 1.0
        known = terms.get(stem)
        if known is None:
            if len(terms) >= MAX_TERMS:
                continue
            forms = tuple(f for f in IRREGULAR_FORMS.get(word, ()) if f != word)
            terms[stem] = Term(word, stem, weight, forms)
        elif weight > known.weight:
            terms[stem] = Term(known.word, stem, weight, known.forms)
    return list(terms.values()), dates


def make_snippet(
    tok: apsw.FTS5Tokenizer, text: str, weights: dict[str, float], width: int = 240
) -> str:
    """The stretch of ``text`` (about ``width`` characters) richest in query words."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    data = flat.encode("utf-8")
    found = spans(tok, data)
    best, best_value = 0, -1.0
    for i, (start, _, _) in enumerate(found):
        seen: set[str] = set()
        value = 0.0
        for _, end, stem in found[i:]:
            if end - start > width:
                break
            if stem in weights and stem not in seen:
                seen.add(stem)
                value += weights[stem]
        if value > best_value:
            best, best_value = i, value
    # Open a few words before the best stretch so it reads in context.
    begin = found[max(0, best - 3)][0] if found else 0
    chunk = data[begin:].decode("utf-8", "ignore")
    cut = chunk[:width]
    if len(chunk) > width and " " in cut[width // 2 :]:
        cut = cut[: cut.rfind(" ")]
    prefix = "…" if begin else ""
    suffix = "…" if len(chunk) > len(cut) else ""
    return f"{prefix}{cut.strip()}{suffix}"
