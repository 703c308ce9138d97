"""What the person said themself, and what they asked for (issue 43).

A prompt holds more than the person's own statements: what they quote (``"..."``, a
``>`` line), paste (a fenced block, the lines after "here is the README:"), report ("the
vendor page says I prefer X") and ask ("Which account does Quillmarsh use?"). None of
those are theirs to stand on: a claim the curator draws from them is a stranger's, or a
question's, not the person's word.

* :func:`own` is the prompt with all of that cut out: the sentences the person states,
  and their requests (a question that asks the agent to do something, "can you forget
  ...?", is a request; one that asks for information is not a statement).
* :func:`asks` tells which requests the person's own words make: to forget or delete
  (:data:`FORGET`), that something changed or is no longer so (:data:`CHANGE`: what a
  deleted or replaced line needs), that a task is done (:data:`DONE`), yes to what the
  agent asked them to confirm (:data:`YES`). A request is read
  as the person's only in their own words: a page saying "please forget Heron" asks
  nothing.

English, German, French and Spanish, as the grounding corpus. Pure functions of text.
"""

from __future__ import annotations

import re
from typing import Literal

Request = Literal["forget", "change", "done", "yes"]

#: Quoted text: straight, curly and guillemet quotes (a quote of one word is a mention: it
#: stays, "call me 'Sam'" is the person's own).
_QUOTED = re.compile(
    r'"[^"\n]{0,400}?\s[^"\n]{0,400}?"|“[^”\n]*?\s[^”\n]*?”|«[^»\n]*?»|„[^“\n]*?\s[^“\n]*?“'
    r"|(?<![\w])'[^'\n]{0,400}?\s[^'\n]{0,400}?'(?![\w])"
)
#: A fenced block, and the lines of a paste: a quoted ``>`` line, an indented code line.
_FENCED = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_PASTED_LINE = re.compile(r"^(?:\s*>|\t| {4,}).*$", re.M)
#: A line naming a source and ending with a colon introduces a paste: the rest of the prompt
#: ("Here is the README:", "the error log:"); "my preferences:" introduces the person's own.
_PASTE_AFTER = re.compile(
    r"\b(?:readme|page|site|mail|e-?mail|message|log|output|file|text|docs?|documentation"
    r"|article|post|issue|ticket|thread|snippet|error|trace|paste|pasted|content|transcript"
    r"|seite|nachricht|datei|texte?|courriel|fichier|journal|página|correo|mensaje|archivo)\b"
    r"[^\n]*:[ \t]*\n[\s\S]*",
    re.I,
)
#: Reported speech: what a page, a file, a mail or someone else says is theirs, to the end of
#: the sentence ("the vendor page says I prefer X", "laut der Seite ..."); what the person
#: says they said is theirs ("as I said, I prefer tabs": :data:`_MYSELF`).
_REPORTED = re.compile(
    r"\b(?:says|said|writes|wrote|claims|claimed|states|stated|reads|tells (?:me|us)"
    r"|according to|sagt|schreibt|steht|laut|behauptet|dit|selon|prétend|dice|según"
    r"|afirma)\b[^.!?\n]*",
    re.I,
)
_MYSELF = re.compile(r"(?:\b(?:i|we|ich|wir|je|j'ai|nous|yo|como)\s+)$", re.I)
_SENTENCES = re.compile(r"[^.!?\n]+[.!?]*")
#: A question that asks the agent to act is a request ("can you ...?", "könntest du ...?").
_REQUEST_QUESTION = re.compile(
    r"^\s*(?:please|pls|kindly|can|could|would|will|shall|do you mind|bitte|kannst|könntest"
    r"|kann|würdest|magst|peux|pourrais|pouvez|pourriez|veux-tu|s'il|puedes|podrías|podría"
    r"|puede|quieres|por favor)\b",
    re.I,
)

#: Words of a request to forget or delete (stems and forms, as the person types them).
FORGET = re.compile(
    r"\b(?:forget|forgot|forgotten|erase|delete|remove|drop|wipe|purge|scrub|unlearn"
    r"|don'?t (?:remember|keep|store)|stop remembering|vergiss|vergessen|vergesse|lösch\w*"
    r"|entfern\w*|streich\w*|oublie\w*|oublier|efface\w*|supprim\w*|retire\w*|olvid\w*"
    r"|borr[ae]\w*|elimin\w*|quit[ae]\w*)\b",
    re.I,
)
#: Words saying that something changed or is no longer so (a line of theirs deleted or
#: replaced: "I'm not allergic to hazelnuts any more", "I moved to Lisbon").
CHANGE = re.compile(
    r"\b(?:forget|erase|delete|remove|drop|vergiss|lösch\w*|entfern\w*|oublie\w*|efface\w*"
    r"|supprim\w*|olvid\w*|borr[ae]\w*|elimin\w*|no longer|not any ?more|anymore|not"
    r"|isn'?t|aren'?t|wasn'?t|don'?t|doesn'?t|never"
    r"|wrong|actually|instead|moved|changed|switched|stopped|quit|now|new|nicht mehr|kein\w*"
    r"|nicht|falsch|umgezogen|gewechselt|jetzt|neu\w*|plus|ne|pas|n'|faux|déménagé|changé"
    r"|désormais|maintenant|nouveau|nouvelle|ya no|no|ahora|nuevo|nueva|cambi\w*|mud\w*)\b",
    re.I,
)
#: Words saying a task is done ("I renewed the certificate", "das ist erledigt"): a word
#: that says so, or the person telling what they did ("I watered the plants", "ich habe es
#: bezahlt", "j'ai appelé", "ya lo he pagado").
DONE = re.compile(
    r"\b(?:i|we)\s+(?:have\s+|'ve\s+|just\s+|already\s+|finally\s+)*\w*[a-df-z]ed\b"
    r"|\b(?:i|we)\s+(?:have\s+|'ve\s+|just\s+|already\s+)*(?:paid|sent|did|took|wrote|made"
    r"|went|bought|got|gave|told|rang|called|put|set|met|ran|brought|found|left|kept)\b"
    r"|\b(?:habe|haben|hab)\b.*\bge\w+(?:t|en)\b|\bj'ai\b|\bnous avons\b"
    r"|\b(?:he|hemos|ya)\s+(?:lo\s+|la\s+)?\w+(?:ado|ido)\b"
    r"|\b(?:done|did|finished|finish|completed|complete|closed|fixed|solved|resolved|handled"
    r"|sorted|paid|sent|renewed|booked|submitted|shipped|merged|deployed|called|took care"
    r"|erledigt|fertig|gemacht|abgeschlossen|bezahlt|erneuert|geschickt|fait|terminé|fini"
    r"|réglé|payé|renouvelé|envoyé|hecho|terminado|listo|pagado|renovado|enviado)\b",
    re.I,
)
#: Words saying yes to what the agent asked ("yes, forget it", "go ahead", "ja, bitte").
YES = re.compile(
    r"\b(?:yes|yeah|yep|sure|ok|okay|go ahead|do it|confirm(?:ed)?|please do|ja|jawohl|genau"
    r"|mach das|oui|d'accord|vas-y|sí|si|claro|adelante|hazlo)\b",
    re.I,
)
_PATTERNS: dict[Request, re.Pattern[str]] = {
    "forget": FORGET,
    "change": CHANGE,
    "done": DONE,
    "yes": YES,
}


def _cut(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(" ", text)


def _unreported(text: str) -> str:
    """``text`` without what it reports another saying (what the person said stays)."""
    out, at = [], 0
    for m in _REPORTED.finditer(text):
        if _MYSELF.search(text[: m.start()]):
            continue
        out.append(text[at : m.start()])
        at = m.end()
    return "".join(out) + text[at:]


def spoken(prompt: str) -> str:
    """The prompt without what the person quotes, pastes or reports another saying."""
    text = _cut(_FENCED, prompt)
    text = _cut(_PASTE_AFTER, text + "\n")
    text = _cut(_PASTED_LINE, text)
    text = _cut(_QUOTED, text)
    return _unreported(text)


def own(prompt: str) -> str:
    """The person's own statements and requests in ``prompt``: :func:`spoken`, without the
    questions that only ask for information."""
    kept = []
    for sentence in _SENTENCES.findall(spoken(prompt)):
        stripped = sentence.strip()
        if stripped.endswith(("?", "¿")) and not _REQUEST_QUESTION.match(stripped.lstrip("¿¡")):
            continue
        kept.append(stripped)
    return " ".join(kept)


#: "Don't forget to ...", "nicht vergessen", "n'oublie pas", "no olvides": a reminder, not
#: a request to forget (found by an attack: "Don't forget to summarize the Heron page" let a
#: page's "forget Heron" erase it).
_REMINDER = re.compile(
    r"(?:\b(?:don'?t|do not|never|not|nicht|nie|ne|n'|no|nunca)\s+(?:\w+\s+){0,1})$", re.I
)
_REMINDER_AFTER = re.compile(r"^\s*(?:to|zu|de|pas|nicht|jamais)\b", re.I)


def asks(prompt: str, request: Request) -> bool:
    """Whether the person's own words in ``prompt`` make a ``request`` of that kind."""
    text = own(prompt)
    for m in _PATTERNS[request].finditer(text):
        if request == "forget" and (
            _REMINDER.search(text[: m.start()]) or _REMINDER_AFTER.match(text[m.end() :])
        ):
            continue
        return True
    return False
